package vault

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
	"github.com/zalando/go-keyring"
)

// KeySize is the data key's size: AES-256.
const KeySize = 32

// EnvKey names the environment variable that supplies the key (base64).
const EnvKey = "DYNAMIC_MCP_VAULT_KEY"

// KeyFile is the fallback key's file name, in the state directory.
const KeyFile = "vault.key"

// service is the keychain item's service; its account is the state
// directory, so two state directories have two keys.
const service = "dynamic-mcp vault"

// Keychain is the OS keychain as the vault uses it.
type Keychain interface {
	Get(service, user string) (string, error)
	Set(service, user, secret string) error
}

// ErrNotFound is what a Keychain's Get returns for no item.
var ErrNotFound = keyring.ErrNotFound

type osKeychain struct{}

func (osKeychain) Get(s, u string) (string, error) { return keyring.Get(s, u) }
func (osKeychain) Set(s, u, p string) error        { return keyring.Set(s, u, p) }

// OS is the platform's keychain (zalando/go-keyring).
var OS Keychain = osKeychain{}

// saidFile holds the key files this process has said it uses: the hub
// says so once, however many times it opens the vault.
var saidFile sync.Map

// Options says where Open looks for the key.
type Options struct {
	Dir      string        // the state directory: the fallback key file's
	Keychain Keychain      // nil: OS
	Wait     time.Duration // bound on each keychain call; 0: 3 s
	Getenv   func(string) string
	Logger   *slog.Logger
}

// Open finds or makes the data key: DYNAMIC_MCP_VAULT_KEY if set; else
// the key file if there is one (a key made while no keychain answered
// stays the key); else the keychain's item; else a new key, kept in the
// keychain, or in the key file (0600) when the keychain does not answer
// within the bound, which it logs; but not when the keychain did not
// answer and sealed files exist (their key may be in it): that is an
// error. Two processes making the first key
// agree on it: the making is under a file lock.
func Open(ctx context.Context, o Options) (*Vault, error) {
	if o.Keychain == nil {
		o.Keychain = OS
	}
	if o.Wait == 0 {
		o.Wait = 3 * time.Second
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	// say tells of a key file once per process, to the first Open that
	// has a logger to tell.
	say := func(file string) bool {
		if o.Logger == nil {
			return false
		}
		_, said := saidFile.LoadOrStore(file, true)
		return !said
	}
	if s := strings.TrimSpace(o.Getenv(EnvKey)); s != "" {
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(k) != KeySize {
			return nil, fmt.Errorf("%s must be %d bytes in base64 (openssl rand -base64 32)", EnvKey, KeySize)
		}
		return New(k, "env")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := filelock.Acquire(ctx, filepath.Join(dir, ".vault.lock"), 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("the vault is busy: %w", err)
	}
	defer l.Unlock()
	file := filepath.Join(dir, KeyFile)
	if k, err := readKeyFile(file); err == nil {
		if say(file) {
			// Warned when the file was written (below); each later start
			// says so at info, so that every secret command does not warn
			// again of what the user was told once.
			o.Logger.Info("vault: the data key is in a file, not the OS keychain", "file", file)
		}
		return New(k, "file")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s, err := bounded(ctx, o.Wait, func() (string, error) { return o.Keychain.Get(service, dir) })
	if err == nil {
		k, derr := base64.StdEncoding.DecodeString(s)
		if derr != nil || len(k) != KeySize {
			return nil, fmt.Errorf("the keychain item %q for %s is not a vault key", service, dir)
		}
		return New(k, "keychain")
	}
	if !errors.Is(err, ErrNotFound) {
		// The keychain did not answer (locked, a dialog, no session): it
		// may hold the key of what is sealed here. A new key would leave
		// every sealed record and secret unreadable for good.
		if f := sealedIn(dir); f != "" {
			return nil, fmt.Errorf("no key opens %s here: %s is not set, there is no %s, and the keychain, which may hold it, did not answer; set %s to the key it was sealed with, or unlock the keychain and try again: %w", f, EnvKey, KeyFile, EnvKey, err)
		}
	}
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if errors.Is(err, ErrNotFound) {
		_, err = bounded(ctx, o.Wait, func() (string, error) {
			return "", o.Keychain.Set(service, dir, base64.StdEncoding.EncodeToString(k))
		})
		if err == nil {
			return New(k, "keychain")
		}
	}
	if say(file) {
		o.Logger.Warn("vault: no OS keychain answered; the data key is kept in a file (set "+EnvKey+" to supply it instead)",
			"file", file, "error", err)
	}
	if err := atomicfile.Write(file, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return New(k, "file")
}

// sealedIn names a file Seal made in dir or a directory in it (sign-in
// records are in one), or is "" when there is none.
func sealedIn(dir string) string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			if sealedFile(p) {
				return p
			}
			continue
		}
		sub, _ := os.ReadDir(p)
		for _, s := range sub {
			if q := filepath.Join(p, s.Name()); !s.IsDir() && sealedFile(q) {
				return q
			}
		}
	}
	return ""
}

func sealedFile(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(magic))
	n, _ := f.Read(b)
	return Sealed(b[:n])
}

// readKeyFile reads the key file, which must be a regular file only its
// owner can read (as ssh asks of a private key): a key others can read
// opens the vault for them.
func readKeyFile(file string) ([]byte, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("vault key file %s is not a regular file (%s); it must be the key itself, mode 0600", file, fi.Mode().Type())
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("vault key file %s can be read by others (mode %04o): chmod 600 it, and take its key as known to them", file, fi.Mode().Perm())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != KeySize {
		return nil, fmt.Errorf("vault key file %s is damaged", file)
	}
	return k, nil
}

// errTimeout says a keychain call did not answer within the bound.
var errTimeout = errors.New("the keychain did not answer in time (locked, or waiting on a dialog)")

// bounded runs f, waiting at most wait. A call that never returns cannot
// be cancelled: its goroutine ends when the call does, writing to a
// buffered channel nobody reads; the hub goes on without it.
func bounded(ctx context.Context, wait time.Duration, f func() (string, error)) (string, error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() { s, err := f(); ch <- result{s, err} }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-t.C:
		return "", errTimeout
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
