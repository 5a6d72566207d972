package signin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Pending per-user sign-ins in the store (store:), so that a link made
// by one replica is opened, confirmed and called back at any other
// behind a round-robin balancer. Each is a row of signInNS under the
// SHA-256 of its state (whoever reads the table learns no link), its
// value sealed with the face's session keys (AES-256-GCM, rowFormat, the row's key
// as associated data, so that a row copied under another key does not
// open): the user, the server, the expiry and, for a flow, the PKCE
// verifier and the client. Every change takes the lock of signInLock,
// so that a state is taken once across replicas and the bounds
// (maxUserSignIns of a user, maxSignIns in all) hold across them.

// rowFormat is the layout of a row's value: the key id byte, the nonce,
// in base64url, as the face's sealed session ids.
var rowFormat = seal.Format{KeyID: true, Text: true}

const (
	signInNS   = "signin"
	signInLock = "pending"
	signInWait = 5 * time.Second
)

// sharedSignIns is pendingSignIns in a store.
type sharedSignIns struct {
	db     shared.Store
	sealer *seal.Sealer
}

// signInRecord is a pending entry as it is sealed into its row.
type signInRecord struct {
	Kind     entryKind          `json:"k"`
	User     string             `json:"u"`
	Server   string             `json:"s"`
	Name     string             `json:"n"`
	Expires  int64              `json:"e"` // Unix milliseconds
	Link     string             `json:"l"`
	Flow     *auth.WebFlowState `json:"f,omitempty"`
	Verifier string             `json:"v,omitempty"`
	Nonce    string             `json:"o,omitempty"`
	Browser  string             `json:"b,omitempty"`
}

// rowKey is the row of state.
func rowKey(state string) string {
	sum := sha256.Sum256([]byte("dynamic-mcp sign-in\x00" + state))
	return hex.EncodeToString(sum[:])
}

func signInAD(key string) []byte { return []byte("dynamic-mcp sign-in\x00" + key) }

func (p sharedSignIns) seal(key string, e *signInEntry) ([]byte, error) {
	r := signInRecord{Kind: e.kind, User: e.user, Server: e.server, Name: e.name, Expires: e.expires.UnixMilli(), Link: e.link,
		Verifier: e.verifier, Nonce: e.nonce, Browser: e.browser}
	if e.flow != nil {
		st := e.flow.Export()
		r.Flow = &st
	}
	plain, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return p.sealer.Seal(plain, signInAD(key), time.Time{})
}

var errSignInRow = errors.New("a pending sign-in does not open")

func (p sharedSignIns) open(key string, value []byte) (*signInEntry, error) {
	plain, _, err := p.sealer.Open(value, signInAD(key), time.Time{})
	if err != nil {
		return nil, errSignInRow
	}
	var r signInRecord
	if json.Unmarshal(plain, &r) != nil {
		return nil, errSignInRow
	}
	e := &signInEntry{kind: r.Kind, user: r.User, server: r.Server, name: r.Name, expires: time.UnixMilli(r.Expires), link: r.Link,
		verifier: r.Verifier, nonce: r.Nonce, browser: r.Browser}
	if r.Flow != nil {
		if e.flow, err = auth.ResumeWeb(*r.Flow, auth.LoginOptions{}); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// put keeps e under state, dropping the expired (and rows no key opens);
// beyond maxUserSignIns of e's user, that user's one closest to expiry;
// beyond maxSignIns, the one closest to expiry.
func (p sharedSignIns) put(ctx context.Context, state string, e *signInEntry) error {
	key := rowKey(state)
	value, err := p.seal(key, e)
	if err != nil {
		return err
	}
	return p.db.Locked(ctx, signInNS, signInLock, signInWait, func(tx shared.Tx) error {
		all, err := tx.All(ctx, signInNS)
		if err != nil {
			return err
		}
		now := time.Now()
		var oldest, userOldest string
		var oldestAt, userOldestAt time.Time
		users, live := 0, 0
		for k, v := range all {
			old, err := p.open(k, v)
			if err != nil || now.After(old.expires) {
				if err := tx.Delete(ctx, signInNS, k); err != nil {
					return err
				}
				continue
			}
			live++
			if oldest == "" || old.expires.Before(oldestAt) {
				oldest, oldestAt = k, old.expires
			}
			if old.user == e.user {
				users++
				if userOldest == "" || old.expires.Before(userOldestAt) {
					userOldest, userOldestAt = k, old.expires
				}
			}
		}
		switch {
		case users >= maxUserSignIns:
			err = tx.Delete(ctx, signInNS, userOldest)
		case live >= maxSignIns && oldest != "":
			err = tx.Delete(ctx, signInNS, oldest)
		}
		if err != nil {
			return err
		}
		return tx.Put(ctx, signInNS, key, value)
	})
}

// get reads the row of state: its key and its value, nil for none (nor
// for the empty state, which no link has).
func (p sharedSignIns) get(ctx context.Context, state string) (key string, v []byte, err error) {
	if state == "" {
		return "", nil, nil
	}
	key = rowKey(state)
	v, err = p.db.Get(ctx, signInNS, key)
	if errors.Is(err, shared.ErrNotFound) {
		return key, nil, nil
	}
	return key, v, err
}

// take removes and returns the live entry under state, of kind, or nil:
// once, across every replica.
func (p sharedSignIns) take(ctx context.Context, state string, kind entryKind) (*signInEntry, error) {
	// A state with no row (a guess, a link used), or of another step
	// (left for its own), costs one read, not the lock every replica's
	// sign-ins take.
	key, v, err := p.get(ctx, state)
	if err == nil && v == nil {
		return nil, nil
	}
	if err == nil {
		if got, err := p.open(key, v); err == nil && got.kind != kind {
			return nil, nil
		}
	}
	var e *signInEntry
	err = p.db.Locked(ctx, signInNS, signInLock, signInWait, func(tx shared.Tx) error {
		v, err := tx.Get(ctx, signInNS, key)
		if errors.Is(err, shared.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		got, err := p.open(key, v)
		if err == nil && got.kind != kind {
			return nil // not this step's: left for its own
		}
		if err := tx.Delete(ctx, signInNS, key); err != nil {
			return err
		}
		if err == nil && time.Now().Before(got.expires) {
			e = got
		}
		return nil
	})
	return e, err
}

// peek is the live entry under state, of kind, left in place; or nil.
func (p sharedSignIns) peek(ctx context.Context, state string, kind entryKind) (*signInEntry, error) {
	key, v, err := p.get(ctx, state)
	if err != nil || v == nil {
		return nil, err
	}
	e, err := p.open(key, v)
	if err != nil || e.kind != kind || time.Now().After(e.expires) {
		return nil, nil
	}
	return e, nil
}

// sameOrigin lets a form of the face's own pages through the Origin
// check: a browser sends Origin with a POST, the face's own URL (which,
// behind a balancer, is not on loopback nor among http.allowed_origins).
// Every other Origin is next's to judge.
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && o == PublicBase(r) {
			r = r.Clone(r.Context())
			r.Header.Del("Origin")
		}
		next.ServeHTTP(w, r)
	})
}

// A call that waits for a sign-in (its client accepted the URL
// elicitation) waits on the replica that made the link, but the
// browser's redirect may come back at another (the balancer routes
// sessions, not browsers). The replica that finishes the sign-in leaves
// a mark under the link's id in signInDoneNS; a replica with calls
// waiting looks for the marks of its links every signInPollEvery (and
// only then: no waiter, no query), tells the call and session, and
// removes the mark. A mark no replica took is removed once it is past
// its link's expiry.

const (
	signInDoneNS    = "signin-done"
	signInPollEvery = time.Second
)

// markDone leaves the mark of link, good until expires.
func (p sharedSignIns) markDone(ctx context.Context, link string, expires time.Time) error {
	return p.db.Put(ctx, signInDoneNS, rowKey(link), []byte(strconv.FormatInt(expires.UnixMilli(), 10)))
}

// watchSignIns starts, once, the loop that looks for the marks of this
// replica's waiters in db; Close stops it.
func (pg *Pages) watchSignIns(db shared.Store) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.closed || pg.watching {
		return
	}
	pg.watching = true
	pg.wg.Add(1)
	go func() {
		defer pg.wg.Done()
		t := time.NewTicker(signInPollEvery)
		defer t.Stop()
		for {
			select {
			case <-pg.stop:
				return
			case <-t.C:
			}
			pg.takeSignInMarks(db)
		}
	}()
}

// takeSignInMarks tells the waiters whose marks are in db, and removes
// those marks and the expired.
func (pg *Pages) takeSignInMarks(db shared.Store) {
	defer func() {
		if v := recover(); v != nil {
			pg.opts.Logger.Error("per-user sign-in: panic looking for finished sign-ins", "panic", v)
		}
	}()
	links := pg.waiters.keys()
	if len(links) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	marks, err := db.All(ctx, signInDoneNS)
	if err != nil {
		pg.opts.Logger.Warn("per-user sign-in: cannot read the finished sign-ins", "err", err)
		return
	}
	if len(marks) == 0 {
		return
	}
	byKey := make(map[string]string, len(links))
	for _, l := range links {
		byKey[rowKey(l)] = l
	}
	now := time.Now()
	for k, v := range marks {
		if l, ok := byKey[k]; ok {
			pg.signedIn(l)
		} else if ms, err := strconv.ParseInt(string(v), 10, 64); err == nil && now.Before(time.UnixMilli(ms)) {
			continue // another replica's
		}
		if err := db.Delete(ctx, signInDoneNS, k); err != nil {
			pg.opts.Logger.Warn("per-user sign-in: cannot remove a finished sign-in's mark", "err", err)
		}
	}
}
