package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// Shared client registrations (a server's auth: per-user): every user's
// sign-in to a server through the hub's face uses one client the hub
// registered (RFC 7591) with that server's authorization server for the
// face's redirect, not a client of its own, so that a team makes one
// registration, not one per person. It is made at the first user's
// sign-in and kept beside the server's records, one per authorization
// server (issuer) and redirect: <dir>/<server>/clients/<hash>.sealed,
// sealed by the vault as a record is, or with store: in the shared
// store. It is made under a lock (the file lock, or the store's advisory
// lock), so that first sign-ins at once, in several processes or
// replicas, make one: the later ones wait and use it. Each user's record
// still names the client its tokens were issued to, for renewals.
//
// Before a kept registration is used, the token endpoint is asked
// whether it still knows the client (a token request with a code that
// is no code: invalid_grant says it does, invalid_client that it does
// not, RFC 6749 §5.2): a server that forgot it (a reset, an expiry)
// would otherwise show the user an error page the hub never hears of
// (§4.1.2.1). A forgotten client is dropped and registered again, once
// for all the sign-ins that found it forgotten.

// Clients keeps the registration every user's sign-in to one server
// shares (LoginOptions.Clients).
type Clients struct {
	s      *Store
	server string
}

// Clients is where the registration every user's sign-in to server
// shares is kept: s's directory or shared store, whoever's store s is.
func (s *Store) Clients(server string) *Clients {
	return &Clients{s: s.root(), server: server}
}

// clientNS is the namespace of shared registrations in a shared store.
const clientNS = tokenNS + ":client"

// hubClient is a kept registration.
type hubClient struct {
	Server       string    `json:"server"`
	Issuer       string    `json:"issuer"`
	RedirectURI  string    `json:"redirect_uri"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthMethod   string    `json:"token_endpoint_auth_method,omitempty"`
	Registered   time.Time `json:"registered"`
}

func (h *hubClient) client() client {
	return client{id: h.ClientID, secret: h.ClientSecret, method: h.AuthMethod, registration: RegDynamic}
}

// clientKey names the registration for issuer and redirect: a hash, so
// that file names carry neither.
func clientKey(issuer, redirect string) string {
	sum := sha256.Sum256([]byte(issuer + "\x00" + redirect))
	return hex.EncodeToString(sum[:16])
}

func (c *Clients) path(key, ext string) string {
	name := key + ext
	if ext == ".lock" {
		name = "." + name
	}
	return filepath.Join(c.s.dir, url.PathEscape(c.server), "clients", name)
}

// sealedFor binds a registration's seal to its server and key: one
// copied to another's file does not open.
func (c *Clients) sealedFor(key string) string { return c.server + "\x00client:" + key }

// dbKey is the registration's key in the shared store.
func (c *Clients) dbKey(key string) string { return url.PathEscape(c.server) + "/" + key }

// get returns the registration for issuer and redirect, registering one
// with reg when none is kept or the kept one's client is no longer known
// (known says, for a client, whether the authorization server knows it).
func (c *Clients) get(ctx context.Context, log *slog.Logger, issuer, redirect string, known func(client) bool, reg func() (client, error)) (client, error) {
	key := clientKey(issuer, redirect)
	h, err := c.read(ctx, c.s.db, key)
	if err != nil && !errors.Is(err, ErrNoToken) {
		return client{}, err
	}
	rejected := ""
	if h != nil {
		if known(h.client()) {
			return h.client(), nil
		}
		rejected = h.ClientID
	}
	var out client
	err = c.locked(ctx, key, func(rw clientRW) error {
		h, err := rw.read()
		if err != nil && !errors.Is(err, ErrNoToken) {
			return err
		}
		// Made or made again since it was read: that one.
		if h != nil && h.ClientID != rejected {
			out = h.client()
			return nil
		}
		if rejected != "" {
			log.Info("the authorization server no longer knows the hub's client: registering again", "server", c.server, "issuer", issuer, "client_id", rejected)
		}
		if out, err = reg(); err != nil {
			return err
		}
		if h == nil && c.kept(ctx) >= maxKeptClients {
			// The redirect is made of the Host a caller reached the hub
			// at: a caller who varies it must not fill the store.
			log.Warn("the hub keeps no more registrations for this server: this one is used once", "server", c.server, "issuer", issuer, "redirect", redirect, "kept", maxKeptClients)
			return nil
		}
		return rw.write(&hubClient{Server: c.server, Issuer: issuer, RedirectURI: redirect,
			ClientID: out.id, ClientSecret: out.secret, AuthMethod: out.method, Registered: time.Now()})
	})
	return out, err
}

// maxKeptClients bounds the registrations kept for one server: one per
// issuer and redirect, and a redirect is made of the Host the caller
// reached the hub at, which a caller behind a balancer that passes Host
// on may vary at will. Beyond it a sign-in registers a client it does
// not keep.
const maxKeptClients = 16

// kept is how many registrations are kept for c's server.
func (c *Clients) kept(ctx context.Context) int {
	if db := c.s.db; db != nil {
		keys, err := db.Keys(ctx, clientNS)
		if err != nil {
			return 0
		}
		n := 0
		for _, k := range keys {
			if strings.HasPrefix(k, c.dbKey("")) {
				n++
			}
		}
		return n
	}
	entries, _ := os.ReadDir(filepath.Dir(c.path("x", sealedExt)))
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), sealedExt) {
			n++
		}
	}
	return n
}

// clientRW reads and writes a registration under its lock.
type clientRW struct {
	read  func() (*hubClient, error)
	write func(h *hubClient) error
}

// locked runs fn holding key's lock: the file lock beside the
// registration, or the shared store's lock, whose transaction commits
// what fn wrote. Both wait at most lockWait.
func (c *Clients) locked(ctx context.Context, key string, fn func(rw clientRW) error) error {
	if db := c.s.db; db != nil {
		return db.Locked(ctx, clientNS, c.dbKey(key), lockWait, func(tx shared.Tx) error {
			return fn(clientRW{
				read:  func() (*hubClient, error) { return c.read(ctx, tx, key) },
				write: func(h *hubClient) error { return c.write(ctx, tx, key, h) },
			})
		})
	}
	if err := c.s.privateDir(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path(key, sealedExt)), 0o700); err != nil {
		return err
	}
	l, err := filelock.Acquire(ctx, c.path(key, ".lock"), lockWait)
	if err != nil {
		return fmt.Errorf("the token store is busy: %w", err)
	}
	defer l.Unlock()
	return fn(clientRW{
		read:  func() (*hubClient, error) { return c.read(ctx, nil, key) },
		write: func(h *hubClient) error { return c.write(ctx, nil, key, h) },
	})
}

// read returns key's registration from tx (with a shared store; nil:
// the store itself) or its file, or ErrNoToken.
func (c *Clients) read(ctx context.Context, tx shared.Tx, key string) (*hubClient, error) {
	var v *vault.Vault
	var b []byte
	var err error
	if db := c.s.db; db != nil {
		if tx == nil {
			tx = db
		}
		if v, err = c.s.sharedVault(ctx, tx); err != nil {
			return nil, err
		}
		if b, err = tx.Get(ctx, clientNS, c.dbKey(key)); errors.Is(err, shared.ErrNotFound) {
			return nil, ErrNoToken
		}
	} else {
		if v, err = c.s.openVault(); err != nil {
			return nil, err
		}
		if b, err = os.ReadFile(c.path(key, sealedExt)); errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNoToken
		}
	}
	if err != nil {
		return nil, err
	}
	if b, err = v.Open(b, c.sealedFor(key)); err != nil {
		return nil, fmt.Errorf("the hub's client registration for %s: %w", c.server, err)
	}
	h := new(hubClient)
	if err := json.Unmarshal(b, h); err != nil {
		return nil, fmt.Errorf("the hub's client registration for %s: %w", c.server, err)
	}
	return h, nil
}

// write seals h and keeps it as key's registration, in tx or its file
// (atomically); the caller holds key's lock.
func (c *Clients) write(ctx context.Context, tx shared.Tx, key string, h *hubClient) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if tx != nil {
		v, err := c.s.sharedVault(ctx, tx)
		if err != nil {
			return err
		}
		return tx.Put(ctx, clientNS, c.dbKey(key), v.Seal(b, c.sealedFor(key)))
	}
	v, err := c.s.openVault()
	if err != nil {
		return err
	}
	return atomicfile.Write(c.path(key, sealedExt), v.Seal(b, c.sealedFor(key)), 0o600)
}

// clientKnown asks the token endpoint of md whether it knows c, with a
// token request for a code that is no code: only invalid_client (RFC
// 6749 §5.2) says it does not; any other answer, or none, is taken to
// say it does (the sign-in then goes on as it would have).
func clientKnown(ctx context.Context, hc *http.Client, md *serverMetadata, c client, redirect, resource string) bool {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {"dynamic-mcp-client-check-" + randomString()},
		"redirect_uri": {redirect}, "code_verifier": {randomString() + randomString()}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := tokenRequest(ctx, md.TokenEndpoint, form, resource, c)
	if err != nil {
		return true
	}
	resp, err := hc.Do(req)
	if err != nil {
		return true
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	return e.Error != "invalid_client"
}
