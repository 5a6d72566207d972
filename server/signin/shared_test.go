package signin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// In the store, pending sign-ins are bounded as in memory (8 of a user,
// 256 in all), taken once, and sealed: a row names neither its state nor
// its user, and a row copied under another state does not open.
func TestSharedSignInsBounded(t *testing.T) {
	dbURL := pgtest.Start(t)
	db, err := pgstore.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sl, _ := seal.New([][]byte{make([]byte, 32)}, rowFormat)
	p := sharedSignIns{db: db, sealer: sl}
	ctx := t.Context()
	exp := time.Now().Add(signInTTL)
	if err := p.put(ctx, "bob-link", &signInEntry{kind: kindLink, user: "jwt:bob", server: "docs", expires: exp}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := p.put(ctx, fmt.Sprint("alice-", i), &signInEntry{kind: kindLink, user: "jwt:alice", server: "docs", expires: exp.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.All(ctx, signInNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+maxUserSignIns {
		t.Errorf("%d rows, want bob's and alice's %d newest", len(rows), maxUserSignIns)
	}
	for k, v := range rows {
		if strings.Contains(k+string(v), "alice") || strings.Contains(k+string(v), "bob-link") {
			t.Errorf("a row in clear: %s %s", k, v)
		}
	}
	if e, _ := p.peek(ctx, "alice-0", kindLink); e != nil {
		t.Error("alice's oldest link was kept")
	}
	if e, _ := p.peek(ctx, "alice-11", kindLink); e == nil || e.user != "jwt:alice" {
		t.Errorf("alice's newest link: %+v", e)
	}
	if e, _ := p.take(ctx, "bob-link", kindFlow); e != nil {
		t.Error("a link taken as a flow")
	}
	if e, _ := p.take(ctx, "bob-link", kindLink); e == nil || e.user != "jwt:bob" {
		t.Errorf("bob's link: %+v", e)
	}
	if e, _ := p.take(ctx, "bob-link", kindLink); e != nil {
		t.Error("bob's link taken twice")
	}
	// A row copied under another state does not open.
	v := rows[rowKey("alice-11")]
	if err := db.Put(ctx, signInNS, rowKey("forged"), v); err != nil {
		t.Fatal(err)
	}
	if e, _ := p.take(ctx, "forged", kindLink); e != nil {
		t.Error("a row copied under another state opened")
	}
	// In all: at most maxSignIns.
	for i := range maxSignIns + 4 {
		if err := p.put(ctx, fmt.Sprint("u-", i), &signInEntry{kind: kindLink, user: fmt.Sprint("jwt:u", i), server: "docs", expires: exp}); err != nil {
			t.Fatal(err)
		}
	}
	if rows, _ := db.All(ctx, signInNS); len(rows) != maxSignIns {
		t.Errorf("%d rows, want %d", len(rows), maxSignIns)
	}
}
