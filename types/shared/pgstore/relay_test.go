package pgstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// The relay between two replicas: payloads small and large reach every
// subscriber, in order; a GET stream's events are numbered by the store
// whichever replica appends them, read from either, and bounded; an
// ended session is ended for both; a database of schema version 1 is
// brought to version 2.
func TestRelayBetweenReplicas(t *testing.T) {
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	ctx := t.Context()

	heard := make(chan string, 16)
	var wg sync.WaitGroup
	sub, stop := context.WithCancel(t.Context())
	wg.Go(func() { b.Subscribe(sub, "relay_test", func(p string) { heard <- p }) })
	defer func() { stop(); wg.Wait() }()
	big := strings.Repeat("x", 20000)
	// The listener may not be listening yet: publish until it hears.
	deadline := time.Now().Add(await.Slow * 10 * time.Second)
	for got := ""; got != "hello"; {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber heard nothing")
		}
		_ = a.Publish(ctx, "relay_test", "hello")
		select {
		case got = <-heard:
		case <-time.After(100 * time.Millisecond):
		}
	}
	// A "hello" published before the one heard may still be on its way:
	// what follows is read past those.
	next := func() string {
		for {
			if p := <-heard; p != "hello" {
				return p
			}
		}
	}
	if err := a.Publish(ctx, "relay_test", big); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, "relay_test", "after"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != big {
		t.Fatalf("large payload: %d bytes", len(got))
	}
	if got := next(); got != "after" {
		t.Fatalf("then: %q", got)
	}

	seqs, err := a.AppendEvents(ctx, "relay_test", []shared.NewEvent{{Stream: "s1", Msg: []byte("one"), Note: true, Notice: "e s1"}, {Stream: "s1", Msg: []byte("two"), Notice: "e s1"}})
	if err != nil || len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Fatalf("append on a: %v, %v", seqs, err)
	}
	if got := next(); got != "e s1 2" {
		t.Fatalf("notice: %q", got)
	}
	seqs, err = b.AppendEvents(ctx, "relay_test", []shared.NewEvent{{Stream: "s1", Msg: []byte("three")}})
	if err != nil || seqs[0] != 3 {
		t.Fatalf("append on b: %v, %v", seqs, err)
	}
	evs, last, err := a.Events(ctx, "s1", 1)
	if err != nil || last != 3 || len(evs) != 2 || string(evs[0].Msg) != "two" || evs[0].Seq != 2 || evs[0].Note || string(evs[1].Msg) != "three" {
		t.Fatalf("events after 1: %+v, %d, %v", evs, last, err)
	}
	if evs, last, _ := b.Events(ctx, "none", 0); len(evs) != 0 || last != 0 {
		t.Fatalf("events of no stream: %+v %d", evs, last)
	}

	// Bounds: 256 events of a stream; 1 MiB of them; one larger is numbered only.
	var many []shared.NewEvent
	for i := range 300 {
		many = append(many, shared.NewEvent{Stream: "s2", Msg: []byte(strconv.Itoa(i))})
	}
	if _, err := a.AppendEvents(ctx, "relay_test", many); err != nil {
		t.Fatal(err)
	}
	evs, last, _ = b.Events(ctx, "s2", 0)
	if last != 300 || len(evs) != shared.MaxEvents || evs[0].Seq != 45 {
		t.Fatalf("300 events: %d kept from %d, last %d", len(evs), evs[0].Seq, last)
	}
	half := make([]byte, 600<<10)
	if _, err := a.AppendEvents(ctx, "relay_test", []shared.NewEvent{{Stream: "s3", Msg: half}, {Stream: "s3", Msg: half}, {Stream: "s3", Msg: make([]byte, 2<<20)}}); err != nil {
		t.Fatal(err)
	}
	if evs, last, _ = b.Events(ctx, "s3", 0); last != 3 || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("1 MiB: kept %d, last %d", len(evs), last)
	}

	until := time.Now().Add(time.Hour)
	if err := a.End(ctx, "s1", until); err != nil {
		t.Fatal(err)
	}
	if ended, err := b.Ended(ctx, "s1"); !ended || err != nil {
		t.Fatalf("ended on b: %v %v", ended, err)
	}
	if ended, _ := b.Ended(ctx, "s2"); ended {
		t.Fatal("s2 ended")
	}
	if evs, _, _ := b.Events(ctx, "s1", 0); len(evs) != 0 {
		t.Fatalf("an ended session's events: %d", len(evs))
	}
	_ = a.End(ctx, "s9", time.Now().Add(-time.Second))
	if ended, _ := b.Ended(ctx, "s9"); ended {
		t.Fatal("an ended session whose time is over")
	}

	// A database of version 1 (tables of version 2 missing) is upgraded.
	for _, q := range []string{`DROP TABLE dynamic_mcp_events`, `DROP TABLE dynamic_mcp_ended`, `UPDATE dynamic_mcp_schema SET version = 1`} {
		if _, err := a.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c := open(t, url)
	var v int
	if err := c.pool.QueryRow(ctx, `SELECT version FROM dynamic_mcp_schema`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version after the upgrade: %d, %v", v, err)
	}
	if _, err := c.Ended(ctx, "s1"); err != nil {
		t.Fatalf("the upgraded database: %v", err)
	}
}

// Beyond the bound of all streams' events, the oldest go, whichever
// stream's; and an ended session's row goes once its time is over.
func TestRelayEventsTotalBound(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx := t.Context()
	s.eventsTotal = 1000
	for i := range 6 {
		stream := "s" + strconv.Itoa(i%2)
		if _, err := s.AppendEvents(ctx, "relay_test", []shared.NewEvent{{Stream: stream, Msg: make([]byte, 300)}}); err != nil {
			t.Fatal(err)
		}
	}
	s.pruneEvents(ctx)
	var n, bytes int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(length(msg)), 0) FROM dynamic_mcp_events`).Scan(&n, &bytes); err != nil {
		t.Fatal(err)
	}
	if n != 3 || bytes > 1000 {
		t.Fatalf("kept %d events, %d bytes", n, bytes)
	}
	for _, stream := range []string{"s0", "s1"} {
		evs, last, _ := s.Events(ctx, stream, 0)
		if last != 3 || len(evs) == 0 || evs[len(evs)-1].Seq != 3 {
			t.Errorf("%s: the newest kept? %+v, last %d", stream, evs, last)
		}
	}
}

// The rows of large payloads are bounded in bytes, not only in count: a
// client relaying answers of megabytes does not fill the database with
// relayRows of them; the newest is kept whatever its size.
func TestRelayRowsBytesBound(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx := t.Context()
	s.relayTotal = 100_000
	big := strings.Repeat("x", 30_000)
	for range 20 {
		if err := s.Publish(ctx, "relay_test", big); err != nil {
			t.Fatal(err)
		}
	}
	var n, bytes int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(length(payload)), 0) FROM dynamic_mcp_relay`).Scan(&n, &bytes); err != nil {
		t.Fatal(err)
	}
	if bytes > 100_000 || n == 0 {
		t.Fatalf("kept %d rows, %d bytes", n, bytes)
	}
	huge := strings.Repeat("y", 200_000)
	if err := s.Publish(ctx, "relay_test", huge); err != nil {
		t.Fatal(err)
	}
	var newest int
	if err := s.pool.QueryRow(ctx, `SELECT length(payload) FROM dynamic_mcp_relay ORDER BY id DESC LIMIT 1`).Scan(&newest); err != nil || newest != len(huge) {
		t.Fatalf("the newest row: %d bytes, %v", newest, err)
	}
}

// Two replicas appending to one stream at once: the numbers go 1, 2, ...
// with no gap and none twice, and each replica's events keep its order.
func TestRelayConcurrentAppendsOrdered(t *testing.T) {
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	ctx := t.Context()
	const n = 60
	var wg sync.WaitGroup
	for _, st := range []struct {
		s    *Store
		name string
	}{{a, "a"}, {b, "b"}} {
		wg.Go(func() {
			for i := range n {
				if _, err := st.s.AppendEvents(ctx, "relay_test", []shared.NewEvent{{Stream: "s", Msg: []byte(st.name + strconv.Itoa(i)), Notice: "e s"}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	events, last, err := a.Events(ctx, "s", 0)
	if err != nil || last != 2*n || len(events) != 2*n {
		t.Fatalf("%d events, last %d, %v", len(events), last, err)
	}
	next := map[byte]int{}
	for i, e := range events {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d numbered %d", i, e.Seq)
		}
		if want := string(e.Msg[0]) + strconv.Itoa(next[e.Msg[0]]); string(e.Msg) != want {
			t.Fatalf("event %d: %s, want %s", e.Seq, e.Msg, want)
		}
		next[e.Msg[0]]++
	}
}
