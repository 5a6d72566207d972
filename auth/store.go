package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// lockWait bounds how long a change of a record waits for another
// process's: longer than a renewal's exchange with the token endpoint may
// take (SafeClient's 30 s), which is what the other process does under the
// lock.
const lockWait = 45 * time.Second

// ErrNoToken says there is no stored sign-in for a server (at its URL).
var ErrNoToken = errors.New("not signed in")

// ErrOtherResource is an ErrNoToken: the sign-in on file was made for
// another resource than the server's (see NewSource), and is not used.
var ErrOtherResource = fmt.Errorf("%w: the sign-in on file was made for another server's resource (RFC 9728 §3.3)", ErrNoToken)

// Record is what the store keeps for one server: the sign-in and how to
// renew it. Its LogValue hides the secrets.
type Record struct {
	Server string `json:"server"`
	URL    string `json:"url"` // the server's URL: a record for another URL is not used
	Issuer string `json:"issuer,omitempty"`
	// AuthServer is the authorization server as the protected resource
	// metadata named it (the issuer, but for oauth.expected_issuer): a
	// server that names others no longer takes this sign-in (see Moved).
	AuthServer    string   `json:"authorization_server,omitempty"`
	TokenEndpoint string   `json:"token_endpoint"`
	Resource      string   `json:"resource,omitempty"`
	ClientID      string   `json:"client_id"`
	ClientSecret  string   `json:"client_secret,omitempty"`
	AuthMethod    string   `json:"token_endpoint_auth_method,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	// Wanted is, after the server refused a call for want of a scope
	// (403 insufficient_scope), the scopes a new sign-in asks for: those
	// held and those the refusal named (see Source.StepUp). It is kept
	// here, not in the hub, so that `auth login`, another process, finds
	// it; a new sign-in's record has none.
	Wanted       []string  `json:"wanted_scopes,omitempty"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Issued is when the access token was obtained: with Expiry, its
	// lifetime, which sets how early it is renewed (see due).
	Issued time.Time `json:"issued,omitzero"`
	// Registration is how the client was registered with the issuer:
	// RegPreRegistered, RegMetadataDocument or RegDynamic.
	Registration string `json:"registration,omitempty"`
	// RedirectURI is the redirect the client was registered with: a
	// dynamic registration is reused only for the same one.
	RedirectURI string `json:"redirect_uri,omitempty"`
	// User is, in a user's own record (a server's auth: per-user), the
	// user's key ("jwt:SUBJECT", "token:NAME"); records saved before it
	// was kept lack it (see UserRecord.Hash).
	User string `json:"user,omitempty"`
}

// How a sign-in's client was registered (Record.Registration), in the
// order of the specification (2025-11-25 and 2026-07-28, "Client
// Registration Approaches").
const (
	RegPreRegistered    = "pre-registered"    // oauth.client_id of the config
	RegMetadataDocument = "metadata-document" // a client ID metadata document's URL
	RegDynamic          = "dynamic"           // dynamic client registration (RFC 7591)
)

// migrate fills in what a record written before records named their
// registration lacks: a client ID that is an https URL is a metadata
// document's; a public client ("none") was registered dynamically, as
// the hub registers; any other was configured.
func (r *Record) migrate() {
	if r.Registration != "" {
		return
	}
	switch {
	case strings.HasPrefix(r.ClientID, "https://"):
		r.Registration = RegMetadataDocument
	case r.AuthMethod == "none":
		r.Registration = RegDynamic
	default:
		r.Registration = RegPreRegistered
	}
}

// LogValue keeps tokens and secrets out of logs.
func (r *Record) LogValue() slog.Value {
	return slog.GroupValue(slog.String("server", r.Server), slog.String("issuer", r.Issuer),
		slog.String("access_token", redact(r.AccessToken)), slog.String("refresh_token", redact(r.RefreshToken)),
		slog.String("client_secret", redact(r.ClientSecret)), slog.Time("expiry", r.Expiry))
}

func redact(s string) string {
	if s == "" {
		return ""
	}
	return "REDACTED"
}

// CanRefresh reports whether the record can be renewed without the user.
func (r *Record) CanRefresh() bool { return r.RefreshToken != "" && r.TokenEndpoint != "" }

// Store keeps one sealed file per server (its record as JSON, encrypted
// with the vault of the state directory, see types/vault) in a directory
// of mode 0700, each file of mode 0600, written atomically. A plaintext
// record of an older version (server.json) is sealed on first use and
// removed. Several processes share the store (the hubs of several clients,
// `auth login`, `tools`): every change of a server's record is made under
// a file lock of that server's, so a renewal re-reads the record and
// renews only what no one renewed since (see Source), and a sign-in is
// never overwritten by a renewal of the sign-in before it.
type Store struct {
	dir string
	// user, for a store of one user's sign-ins (see ForUser), is the
	// hash of the user's key; shared is the store whose vault seals them.
	user   string
	shared *Store
	// userKey is the user's key itself (ForUser's), written into the
	// records it saves so that they can be listed by user.
	userKey string
	// db keeps the records in the store every replica shares in place of
	// dir's files (see NewSharedStore); nil: the files.
	db SharedDB

	mu    sync.Mutex // guards log, vault and keyChecked
	log   *slog.Logger
	vault *vault.Vault
	// keyChecked says the vault's key was checked against db's.
	keyChecked bool
}

// NewStore keeps records in dir; the vault's key is looked for in dir's
// parent, the state directory.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// SetLogger sets where the store says how its vault's key is kept (once,
// when it first opens the vault). Call it before the store is used.
func (s *Store) SetLogger(l *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = l
}

// Dir is where the records are.
func (s *Store) Dir() string { return s.dir }

// sealedExt names a sealed record; plainExt one of an older version.
const (
	sealedExt = ".sealed"
	plainExt  = ".json"
)

func (s *Store) path(server string) string {
	if s.user != "" {
		return s.userPath(server, sealedExt)
	}
	return filepath.Join(s.dir, url.PathEscape(server)+sealedExt)
}

func (s *Store) plainPath(server string) string {
	if s.user != "" {
		return s.userPath(server, plainExt)
	}
	return filepath.Join(s.dir, url.PathEscape(server)+plainExt)
}

// root is the store of the state directory: s, or the one a user's
// store (ForUser) shares its vault and registrations with.
func (s *Store) root() *Store {
	if s.shared != nil {
		return s.shared
	}
	return s
}

// openVault opens the state directory's vault, once: a failure (the
// vault busy, say) is tried again on the next use.
func (s *Store) openVault() (*vault.Vault, error) {
	if s.shared != nil {
		return s.shared.openVault()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vault == nil {
		v, err := vault.Open(context.Background(), vault.Options{Dir: filepath.Dir(s.dir), Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("token store: %w", err)
		}
		s.vault = v
	}
	return s.vault, nil
}

// lockPath is the lock file of server's record: a dot file, which List
// skips, left in place (an unlocked file is no lock).
func (s *Store) lockPath(server string) string {
	if s.user != "" {
		return s.userPath(server, ".lock")
	}
	return filepath.Join(s.dir, "."+url.PathEscape(server)+".lock")
}

// lock takes server's lock, waiting at most lockWait.
func (s *Store) lock(ctx context.Context, server string) (*filelock.Lock, error) {
	if err := s.privateDir(); err != nil {
		return nil, err
	}
	if err := s.userDir(server); err != nil {
		return nil, err
	}
	l, err := filelock.Acquire(ctx, s.lockPath(server), lockWait)
	if err != nil {
		return nil, fmt.Errorf("the token store is busy: %w", err)
	}
	return l, nil
}

// Load returns the record of server at serverURL, or ErrNoToken. A
// plaintext record is sealed, under the server's lock, and removed.
func (s *Store) Load(server, serverURL string) (*Record, error) {
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), lockWait)
		defer cancel()
		return s.sharedLoad(ctx, s.db, server, serverURL)
	}
	return s.load(context.Background(), server, serverURL, false)
}

// load is Load; locked says the caller holds server's lock.
func (s *Store) load(ctx context.Context, server, serverURL string, locked bool) (*Record, error) {
	r, plain, err := s.read(server)
	if err != nil {
		return nil, err
	}
	if plain {
		if r, err = s.migrate(ctx, server, locked); err != nil {
			return nil, err
		}
	}
	r.migrate()
	if r.URL != serverURL {
		return nil, fmt.Errorf("%w (the sign-in on file is for %s)", ErrNoToken, r.URL)
	}
	return r, nil
}

// read returns server's record, sealed or else plaintext (plain), or
// ErrNoToken.
func (s *Store) read(server string) (r *Record, plain bool, err error) {
	v, err := s.openVault()
	if err != nil {
		return nil, false, err
	}
	b, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		plain = true
		b, err = os.ReadFile(s.plainPath(server))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, ErrNoToken
	}
	if err != nil {
		return nil, false, err
	}
	if !plain {
		if b, err = v.Open(b, s.sealedFor(server)); err != nil {
			return nil, false, fmt.Errorf("token file %s: %w", s.path(server), err)
		}
	}
	r = new(Record)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, false, fmt.Errorf("token file %s: %w", s.path(server), err)
	}
	return r, plain, nil
}

// migrate seals server's plaintext record and removes the plaintext,
// under server's lock (taken unless locked), and returns the record.
func (s *Store) migrate(ctx context.Context, server string, locked bool) (*Record, error) {
	if !locked {
		l, err := s.lock(ctx, server)
		if err != nil {
			return nil, err
		}
		defer l.Unlock()
	}
	r, plain, err := s.read(server) // another process may have sealed it since
	if err != nil {
		return nil, err
	}
	if plain {
		if err := s.write(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Save writes r atomically, under its server's lock.
func (s *Store) Save(r *Record) error {
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*lockWait)
		defer cancel()
		return s.withLock(ctx, r.Server, func(l lockedRecord) error { return l.write(r) })
	}
	l, err := s.lock(context.Background(), r.Server)
	if err != nil {
		return err
	}
	defer l.Unlock()
	return s.write(r)
}

// write seals r and writes it atomically, then removes a plaintext
// record of r's server; the caller holds its server's lock.
func (s *Store) write(r *Record) error {
	v, err := s.openVault()
	if err != nil {
		return err
	}
	if err := s.privateDir(); err != nil {
		return err
	}
	if err := s.userDir(r.Server); err != nil {
		return err
	}
	s.stamp(r)
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path(r.Server), v.Seal(b, s.sealedFor(r.Server)), 0o600); err != nil {
		return err
	}
	if err := os.Remove(s.plainPath(r.Server)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the plaintext record of %s: %w", r.Server, err)
	}
	return nil
}

// privateDir makes the store's directory, mode 0700. A directory of its
// own is set to 0700; a symbolic link (a store kept in a synced folder,
// say) is never chmodded through, as that would change a directory the
// user chose elsewhere: its target must already be closed to others, or
// Save refuses and says how to fix it.
func (s *Store) privateDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(s.dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		if fi.Mode().Perm() == 0o700 {
			return nil
		}
		return os.Chmod(s.dir, 0o700)
	}
	target, err := os.Stat(s.dir)
	if err != nil {
		return err
	}
	if perm := target.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return fmt.Errorf("token directory %s is a symbolic link to a directory of mode %04o, which others can read; "+
			"dynamic-mcp does not chmod through a link: run chmod 700 on its target", s.dir, perm)
	}
	return nil
}

// Delete removes server's record, under its lock; removing none is not
// an error.
func (s *Store) Delete(server string) error {
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*lockWait)
		defer cancel()
		return s.db.Locked(ctx, s.ns(), server, lockWait, func(tx shared.Tx) error {
			return tx.Delete(ctx, s.ns(), server)
		})
	}
	_, e1 := os.Stat(s.path(server))
	_, e2 := os.Stat(s.plainPath(server))
	if errors.Is(e1, fs.ErrNotExist) && errors.Is(e2, fs.ErrNotExist) {
		return nil
	}
	l, err := s.lock(context.Background(), server)
	if err != nil {
		return err
	}
	defer l.Unlock()
	for _, p := range []string{s.path(server), s.plainPath(server)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// List returns every record, by server name; plaintext ones are read as
// they are (Load seals them).
func (s *Store) List() ([]*Record, error) {
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), lockWait)
		defer cancel()
		return s.sharedList(ctx)
	}
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*Record
	for _, e := range entries {
		name, ext := e.Name(), filepath.Ext(e.Name())
		if strings.HasPrefix(name, ".") || ext != sealedExt && ext != plainExt {
			continue
		}
		server, err := url.PathUnescape(strings.TrimSuffix(name, ext))
		if err != nil || seen[server] {
			continue
		}
		seen[server] = true
		r, _, err := s.read(server)
		if errors.Is(err, ErrNoToken) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.migrate()
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out, nil
}
