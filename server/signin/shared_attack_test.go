package signin

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// lockCounting is a store that counts the locks taken through Locked.
type lockCounting struct {
	shared.Store
	locks atomic.Int64
}

func (c *lockCounting) Locked(ctx context.Context, ns, key string, wait time.Duration, fn func(tx shared.Tx) error) error {
	c.locks.Add(1)
	return c.Store.Locked(ctx, ns, key, wait, fn)
}

// Every change of the pending sign-ins takes the one lock of every
// replica's sign-ins. A state that exists but is of another step (a
// flow's state, which the user sees in the authorization URL and the
// upstream's authorization server is sent, posted to /auth/start over
// and over; a link's at /auth/callback) must not take it: else whoever
// knows one such state holds every replica's sign-ins behind the lock
// (signInWait, then 503), at no cost to them. It costs one read, as a
// guess does; the step it belongs to still takes it.
func TestSharedSignInOfAnotherStepTakesNoLock(t *testing.T) {
	db, err := pgstore.Open(t.Context(), pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &lockCounting{Store: db}
	sl, _ := seal.New([][]byte{make([]byte, 32)}, rowFormat)
	p := sharedSignIns{db: c, sealer: sl}
	ctx := t.Context()
	if err := p.put(ctx, "mallory-flow", &signInEntry{kind: kindConfirm, user: "jwt:mallory", server: "docs", expires: time.Now().Add(signInTTL)}); err != nil {
		t.Fatal(err)
	}
	before := c.locks.Load()
	for range 50 {
		for _, kind := range []entryKind{kindLink, kindFlow} {
			if e, err := p.take(ctx, "mallory-flow", kind); e != nil || err != nil {
				t.Fatalf("a state of another step taken: %+v %v", e, err)
			}
		}
	}
	if n := c.locks.Load() - before; n != 0 {
		t.Errorf("a state of another step took the sign-ins' lock %d times; want none", n)
	}
	if e, _ := p.take(ctx, "mallory-flow", kindConfirm); e == nil || e.user != "jwt:mallory" {
		t.Errorf("the state at its own step: %+v", e)
	}
}
