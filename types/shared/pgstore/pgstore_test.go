package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/jackc/pgx/v5/pgconn"
)

func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Two replicas on one database: what one writes the other reads; the
// tables are made once, whoever starts first.
func TestValuesSharedByReplicas(t *testing.T) {
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	ctx := t.Context()
	if _, err := b.Get(ctx, "token", "srv"); !errors.Is(err, shared.ErrNotFound) {
		t.Fatalf("get of nothing: %v", err)
	}
	if err := a.Put(ctx, "token", "srv", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "token", "srv", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "token", "Other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "pin", "srv", []byte("not a token")); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get(ctx, "token", "srv"); err != nil || string(v) != "two" {
		t.Fatalf("b reads %q, %v", v, err)
	}
	if keys, err := b.Keys(ctx, "token"); err != nil || !slices.Equal(keys, []string{"Other", "srv"}) {
		t.Fatalf("keys %q, %v", keys, err)
	}
	if all, err := b.All(ctx, "token"); err != nil || len(all) != 2 || string(all["srv"]) != "two" || string(all["Other"]) != "x" {
		t.Fatalf("all: %q, %v", all, err)
	}
	if err := b.Delete(ctx, "token", "srv"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, "token", "srv"); !errors.Is(err, shared.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if v, err := a.Get(ctx, "pin", "srv"); err != nil || string(v) != "not a token" {
		t.Fatalf("another namespace's value: %q, %v", v, err)
	}
}

// Locked takes turns across replicas: increments made by read, wait,
// write under the lock from two pools are never lost; a failing fn
// writes nothing.
func TestLockedTakesTurnsAcrossReplicas(t *testing.T) {
	url := pgtest.Start(t)
	stores := []*Store{open(t, url), open(t, url)}
	ctx := t.Context()
	const each = 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for _, s := range stores {
		for range each {
			wg.Go(func() {
				errs <- s.Locked(ctx, "count", "n", 30*time.Second, func(tx shared.Tx) error {
					n := 0
					if v, err := tx.Get(ctx, "count", "n"); err == nil {
						fmt.Sscan(string(v), &n)
					} else if !errors.Is(err, shared.ErrNotFound) {
						return err
					}
					time.Sleep(5 * time.Millisecond) // a lost update shows
					return tx.Put(ctx, "count", "n", []byte(fmt.Sprint(n+1)))
				})
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := stores[1].Get(ctx, "count", "n"); string(v) != fmt.Sprint(2*each) {
		t.Fatalf("count %s, want %d", v, 2*each)
	}
	failed := errors.New("renewal failed")
	err := stores[0].Locked(ctx, "count", "n", time.Second, func(tx shared.Tx) error {
		if err := tx.Put(ctx, "count", "n", []byte("0")); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	if v, _ := stores[1].Get(ctx, "count", "n"); string(v) != fmt.Sprint(2*each) {
		t.Fatalf("a failed fn's write was kept: %s", v)
	}
}

// The wait for a lock another replica holds is bounded.
func TestLockedWaitIsBounded(t *testing.T) {
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	ctx := t.Context()
	held, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = a.Locked(ctx, "token", "srv", time.Second, func(shared.Tx) error {
			close(held)
			<-release
			return nil
		})
	})
	<-held
	start := time.Now()
	err := b.Locked(ctx, "token", "srv", 200*time.Millisecond, func(shared.Tx) error { return nil })
	close(release)
	wg.Wait()
	if err == nil || time.Since(start) > 30*time.Second { // a wait for the held lock would be for ever
		t.Fatalf("waited %s: %v", time.Since(start), err)
	}
	if err := b.Locked(ctx, "token", "srv", time.Second, func(shared.Tx) error { return nil }); err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
}

// A database that does not answer fails Open with the place it tried,
// never the password; a database of a newer schema is refused.
func TestOpenFailsClearly(t *testing.T) {
	_, err := Open(context.Background(), "postgres://hub:hunter2@127.0.0.1:1/state?connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the database at 127.0.0.1:1/state") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("unreachable: %v", err)
	}
	if _, err := Open(context.Background(), "postgres://hub:hunter2@host:notaport/db"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad URL: %v", err)
	}
	url := pgtest.Start(t)
	s := open(t, url)
	if _, err := s.pool.Exec(t.Context(), `UPDATE dynamic_mcp_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), url); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Fatalf("newer schema: %v", err)
	}
}

// Lock holds the lock Locked takes, across replicas, until unlock; what
// is written through the store meanwhile is there before unlock.
func TestLockHoldsUntilUnlock(t *testing.T) {
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	ctx := t.Context()
	unlock, err := a.Lock(ctx, "pin", "srv", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "pin", "srv", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Locked(ctx, "pin", "srv", 200*time.Millisecond, func(shared.Tx) error { return nil }); err == nil {
		t.Fatal("another replica took the lock while it was held")
	}
	if _, err := b.Lock(ctx, "pin", "srv", 200*time.Millisecond); err == nil {
		t.Fatal("another replica's Lock took the lock while it was held")
	}
	unlock()
	err = b.Locked(ctx, "pin", "srv", time.Second, func(tx shared.Tx) error {
		v, err := tx.Get(ctx, "pin", "srv")
		if err == nil && string(v) != "v1" {
			err = fmt.Errorf("read %q", v)
		}
		return err
	})
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
}

// A bucket shared by two replicas lets through its calls in all, taken
// at once from both, then refuses until it refills; a new rate starts
// full.
func TestTakeSharedBucket(t *testing.T) {
	url := pgtest.Start(t)
	stores := []*Store{open(t, url), open(t, url)}
	ctx := t.Context()
	const calls = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	took, refused := 0, 0
	for i := range 2 * calls {
		wg.Go(func() {
			_, ok, err := stores[i%2].Take(ctx, "g/r/hub", calls, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case ok:
				took++
			default:
				refused++
			}
		})
	}
	wg.Wait()
	if took != calls || refused != calls {
		t.Fatalf("took %d, refused %d of %d calls a hour", took, refused, calls)
	}
	if tokens, ok, err := stores[0].Take(ctx, "g/r/hub", calls, time.Hour); ok || err != nil || tokens >= 1 || tokens < 0 {
		t.Fatalf("an empty bucket: %v %v %v", tokens, ok, err)
	}
	// 5 calls per 500 ms: emptied, it refills (a token every 100 ms; how
	// soon the next take comes is the machine's, so no take is expected
	// to find it empty: the hour's bucket above shows that).
	for range 5 {
		if _, ok, err := stores[1].Take(ctx, "fast", 5, 500*time.Millisecond); !ok || err != nil {
			t.Fatalf("a full bucket: %v %v", ok, err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, ok, err := stores[0].Take(ctx, "fast", 5, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an emptied bucket of 5 calls per 500 ms not refilled in 30 s")
		}
		time.Sleep(20 * time.Millisecond) // a poll's pace
	}
	if _, ok, err := stores[0].Take(ctx, "g/r/hub", calls+1, time.Hour); !ok || err != nil {
		t.Fatalf("a new rate starts full: %v %v", ok, err)
	}
}

// Replicas starting together on a new database make its tables once,
// without a failure on any of them.
func TestOpenTogether(t *testing.T) {
	url := pgtest.Start(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			s, err := Open(t.Context(), url)
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s := open(t, url)
	var rows int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM dynamic_mcp_schema`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("schema version rows: %d, %v", rows, err)
	}
}

// Watch hears what another replica notifies, on its channel only, and
// returns when its context ends. Watch is listen with one fn for both;
// the test listens with the payloads kept, so that it can tell which
// notification it heard.
func TestWatchHearsNotify(t *testing.T) {
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	ctx, cancel := context.WithCancel(t.Context())
	heard := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.listen(ctx, "dynamic_mcp_pins", func() { heard <- "(listening)" }, func(_ *pgconn.PgConn, payload string) error {
			heard <- payload
			return nil
		})
	}()
	// Once the watch LISTENs, fn is called once (what was notified before
	// was not heard), then each notification is heard once: none sent
	// before it is left to come late (and be counted as from another
	// channel).
	eventually(t, "the watch to listen", func() bool {
		var n int
		err := a.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle' AND query LIKE 'LISTEN %dynamic_mcp_pins%'`).Scan(&n)
		return err == nil && n == 1
	})
	select {
	case <-heard:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the watch did not read again once listening")
	}
	if err := a.Notify(t.Context(), "dynamic_mcp_pins"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the watch heard nothing")
	}
	// Delivered in the order sent: one from the other channel would be
	// heard before the last one on the watched channel, if at all.
	for _, n := range [][2]string{{"another_channel", "other"}, {"dynamic_mcp_pins", "last"}} {
		if _, err := a.pool.Exec(t.Context(), `SELECT pg_notify($1, $2)`, n[0], n[1]); err != nil {
			t.Fatal(err)
		}
	}
	for got := ""; got != "last"; {
		select {
		case got = <-heard:
			if got != "last" {
				t.Errorf("heard %q from another channel", got)
			}
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatal("a notification was not heard")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("Watch did not return when its context ended")
	}
}

// A bucket untouched for longer than its period is pruned (it is full,
// as a missing one starts); one within its period is kept.
func TestPruneFullBuckets(t *testing.T) {
	url := pgtest.Start(t)
	s := open(t, url)
	ctx := t.Context()
	if _, _, err := s.Take(ctx, "fast", 5, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Take(ctx, "slow", 5, time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := s.prune(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := pgxCollectKeys(s)
	if err != nil || !slices.Equal(keys, []string{"slow"}) {
		t.Fatalf("buckets after the prune: %q, %v", keys, err)
	}
}

func pgxCollectKeys(s *Store) ([]string, error) {
	rows, err := s.pool.Query(context.Background(), `SELECT key FROM dynamic_mcp_rate ORDER BY key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// A transaction's All sees what the transaction wrote and what others
// committed, and nothing of a transaction rolled back.
func TestLockedAllReadsTheTransaction(t *testing.T) {
	url := pgtest.Start(t)
	s := open(t, url)
	ctx := t.Context()
	if err := s.Put(ctx, "ns", "before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := s.Locked(ctx, "ns", "lock", time.Second, func(tx shared.Tx) error {
		if err := tx.Put(ctx, "ns", "inside", []byte("2")); err != nil {
			return err
		}
		all, err := tx.All(ctx, "ns")
		if err != nil {
			return err
		}
		if len(all) != 2 || string(all["before"]) != "1" || string(all["inside"]) != "2" {
			t.Errorf("All in the transaction: %q", all)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Locked: %v", err)
	}
	if all, err := s.All(ctx, "ns"); err != nil || len(all) != 1 {
		t.Errorf("after the rollback: %q, %v", all, err)
	}
}
