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
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
)

// lockWait bounds how long a change of a record waits for another
// process's: longer than a renewal's exchange with the token endpoint may
// take (SafeClient's 30 s), which is what the other process does under the
// lock.
const lockWait = 45 * time.Second

// ErrNoToken says there is no stored sign-in for a server (at its URL).
var ErrNoToken = errors.New("not signed in")

// Record is what the store keeps for one server: the sign-in and how to
// renew it. Its LogValue hides the secrets.
type Record struct {
	Server string `json:"server"`
	URL    string `json:"url"` // the server's URL: a record for another URL is not used
	Issuer string `json:"issuer,omitempty"`
	// AuthServer is the authorization server as the protected resource
	// metadata named it (the issuer, but for oauth.expected_issuer): a
	// server that names others no longer takes this sign-in (see Moved).
	AuthServer    string    `json:"authorization_server,omitempty"`
	TokenEndpoint string    `json:"token_endpoint"`
	Resource      string    `json:"resource,omitempty"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthMethod    string    `json:"token_endpoint_auth_method,omitempty"`
	Scopes        []string  `json:"scopes,omitempty"`
	AccessToken   string    `json:"access_token"`
	TokenType     string    `json:"token_type,omitempty"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Expiry        time.Time `json:"expiry,omitzero"`
	// Issued is when the access token was obtained: with Expiry, its
	// lifetime, which sets how early it is renewed (see due).
	Issued time.Time `json:"issued,omitzero"`
	// Registration is how the client was registered with the issuer:
	// RegPreRegistered, RegMetadataDocument or RegDynamic.
	Registration string `json:"registration,omitempty"`
	// RedirectURI is the redirect the client was registered with: a
	// dynamic registration is reused only for the same one.
	RedirectURI string `json:"redirect_uri,omitempty"`
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

// Store keeps one JSON file per server in a directory of mode 0700, each
// file of mode 0600, written atomically. Several processes share it (the
// hubs of several clients, `auth login`, `tools`): every change of a
// server's record is made under a file lock of that server's, so a
// renewal re-reads the record and renews only what no one renewed since
// (see Source), and a sign-in is never overwritten by a renewal of the
// sign-in before it.
type Store struct{ dir string }

// NewStore keeps records in dir.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Dir is where the records are.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(server string) string {
	return filepath.Join(s.dir, url.PathEscape(server)+".json")
}

// lockPath is the lock file of server's record: a dot file, which List
// skips, left in place (an unlocked file is no lock).
func (s *Store) lockPath(server string) string {
	return filepath.Join(s.dir, "."+url.PathEscape(server)+".lock")
}

// lock takes server's lock, waiting at most lockWait.
func (s *Store) lock(ctx context.Context, server string) (*filelock.Lock, error) {
	if err := s.privateDir(); err != nil {
		return nil, err
	}
	l, err := filelock.Acquire(ctx, s.lockPath(server), lockWait)
	if err != nil {
		return nil, fmt.Errorf("the token store is busy: %w", err)
	}
	return l, nil
}

// Load returns the record of server at serverURL, or ErrNoToken.
func (s *Store) Load(server, serverURL string) (*Record, error) {
	b, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoToken
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("token file %s: %w", s.path(server), err)
	}
	r.migrate()
	if r.URL != serverURL {
		return nil, fmt.Errorf("%w (the sign-in on file is for %s)", ErrNoToken, r.URL)
	}
	return &r, nil
}

// Save writes r atomically, under its server's lock.
func (s *Store) Save(r *Record) error {
	l, err := s.lock(context.Background(), r.Server)
	if err != nil {
		return err
	}
	defer l.Unlock()
	return s.write(r)
}

// write writes r atomically; the caller holds its server's lock.
func (s *Store) write(r *Record) error {
	if err := s.privateDir(); err != nil {
		return err
	}
	return atomicfile.WriteJSON(s.path(r.Server), r, 0o600)
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
	if _, err := os.Stat(s.path(server)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	l, err := s.lock(context.Background(), server)
	if err != nil {
		return err
	}
	defer l.Unlock()
	err = os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// List returns every record, by server name.
func (s *Store) List() ([]*Record, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var r Record
		if json.Unmarshal(b, &r) == nil {
			r.migrate()
			out = append(out, &r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out, nil
}
