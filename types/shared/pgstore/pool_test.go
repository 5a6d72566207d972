package pgstore

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// The pool under an attacker's and a careless operator's hands: every
// path gives back the connection it took, the bound holds, a connection
// the server ended is replaced, Close ends everything.

// busy runs n statements at once on s, so that n connections are idle
// after.
func busy(t *testing.T, s *Store, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := s.pool.Exec(t.Context(), `SELECT pg_sleep(0.1)`); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := s.idle(); got != n {
		t.Fatalf("%d idle connections, want %d", got, n)
	}
}

func (s *Store) idle() int {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	return len(s.pool.idle)
}

// others counts the backends of adm's database but adm's own whose query
// matches like.
func others(t *testing.T, adm *Store, like string) int {
	t.Helper()
	var n int
	err := adm.pool.QueryRow(t.Context(), `SELECT count(*)::int FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE $1`, like).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// terminate ends the backends of adm's database but its own whose query
// matches like, and waits until they are gone.
func terminate(t *testing.T, adm *Store, like string) {
	t.Helper()
	if _, err := adm.pool.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE $1`, like); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the backends end", func() bool { return others(t, adm, like) == 0 })
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	await.Costly(t, 10*time.Second, what, ok)
}

// waitingForSlot counts the goroutines blocked in acquire's wait for a
// slot, as the runtime's stacks show them.
func waitingForSlot() int {
	buf := make([]byte, 1<<20)
	for len(buf) == runtime.Stack(buf, true) {
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, " [select") && strings.Contains(g, "pgstore.(*pool).acquire(") {
			n++
		}
	}
	return n
}

// A caller whose context has ended gets its error and closes none of the
// idle connections (a ping on a done context fails on a healthy one).
func TestPoolCancelledCallerKeepsIdle(t *testing.T) {
	s := open(t, pgtest.Start(t)+"&pool_max_conns=4")
	busy(t, s, 4)
	time.Sleep(pingAfterIdle + 100*time.Millisecond) // they are pinged before use now
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for range 20 {
		if _, err := s.Get(done, "ns", "k"); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled Get: %v", err)
		}
	}
	if got := s.idle(); got != 4 || len(s.pool.slots) != 0 {
		t.Fatalf("%d idle of 4, %d slots taken", got, len(s.pool.slots))
	}
}

// Each path gives back the connection it took, and one whose statement
// was cut short by its context is closed, never idle again: a query
// cancelled mid-way, a transaction cancelled mid-way (its lock goes with
// it), a transaction's func that panics, a batch with a failing
// statement, N callers that gave up waiting for a slot.
func TestPoolGivesBackOnEveryPath(t *testing.T) {
	url := pgtest.Start(t)
	s, other, adm := open(t, url+"&pool_max_conns=2"), open(t, url), open(t, url+"&pool_max_conns=1")
	ctx := t.Context()
	settled := func(what string, idle int) {
		t.Helper()
		if len(s.pool.slots) != 0 || s.idle() != idle {
			t.Fatalf("after %s: %d slots taken, %d idle (want %d)", what, len(s.pool.slots), s.idle(), idle)
		}
	}

	cut, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	_, err := s.pool.Exec(cut, `SELECT pg_sleep(30)`)
	cancel()
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("a query cut short: %v after %s", err, time.Since(start))
	}
	settled("a query cut short", 0)
	eventually(t, "the cut query's backend ends", func() bool { return others(t, adm, "%pg_sleep(30)%") == 0 })

	cut, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	err = s.Locked(cut, "ns", "k", time.Second, func(tx shared.Tx) error {
		_, err := tx.(txStore).tx.Exec(cut, `SELECT pg_sleep(30)`)
		return err
	})
	cancel()
	if err == nil {
		t.Fatal("a transaction cut short succeeded")
	}
	settled("a transaction cut short", 0)
	if err := other.Locked(ctx, "ns", "k", 5*time.Second, func(shared.Tx) error { return nil }); err != nil {
		t.Fatalf("the lock of a transaction cut short: %v", err)
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was lost")
			}
		}()
		_ = s.Locked(ctx, "ns", "k", time.Second, func(tx shared.Tx) error {
			if err := tx.Put(ctx, "ns", "k", []byte("half")); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	settled("a panic in a transaction", 1)
	if _, err := other.Get(ctx, "ns", "k"); !errors.Is(err, shared.ErrNotFound) {
		t.Fatalf("a panicking transaction's write: %v", err)
	}
	if err := other.Locked(ctx, "ns", "k", 5*time.Second, func(shared.Tx) error { return nil }); err != nil {
		t.Fatalf("the lock of a panicking transaction: %v", err)
	}

	b := &batch{}
	b.Queue(`INSERT INTO dynamic_mcp_state (ns, key, value) VALUES ('ns', 'b', '\x00')`)
	b.Queue(`SELECT 1/0`)
	b.Queue(`SELECT 2`)
	if _, err := s.pool.SendBatch(ctx, b); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("a failing batch: %v", err)
	}
	settled("a failing batch", 1)
	if _, err := s.Get(ctx, "ns", "b"); !errors.Is(err, shared.ErrNotFound) {
		t.Fatalf("a failing batch's first statement was kept: %v", err)
	}

	unlock1, err := s.Lock(ctx, "a", "1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	unlock2, err := s.Lock(ctx, "a", "2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const waits = 40
	for range waits {
		wait, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		_, err := s.Get(wait, "ns", "k")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a wait for a slot of a full pool: %v", err)
		}
	}
	unlock1()
	unlock2()
	settled("cancelled waits", 2)
	var wg sync.WaitGroup
	for i := range 2 { // the pool still holds its two
		wg.Go(func() {
			if err := s.Locked(ctx, "b", string(rune('0'+i)), time.Second, func(shared.Tx) error {
				time.Sleep(50 * time.Millisecond)
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// Connections the server ended while idle (pg_terminate_backend; a
// restart is the same) are replaced before use, within the second an
// idle one is not pinged: the next statements all succeed.
func TestPoolReplacesTerminatedIdle(t *testing.T) {
	url := pgtest.Start(t)
	s, adm := open(t, url+"&pool_max_conns=4"), open(t, url+"&pool_max_conns=1")
	ctx := t.Context()
	busy(t, s, 4)
	terminate(t, adm, "%")
	for i := range 8 {
		if err := s.Put(ctx, "ns", "k", []byte{byte(i)}); err != nil {
			t.Fatalf("statement %d after the terminate: %v", i, err)
		}
	}
	if len(s.pool.slots) != 0 {
		t.Fatalf("%d slots taken", len(s.pool.slots))
	}
}

// The LISTEN connection ended by the server is opened again: what is
// published after is heard, and the subscriber is told ("") that it may
// have missed some.
func TestPoolListenResumesAfterTerminate(t *testing.T) {
	url := pgtest.Start(t)
	s, pub, adm := open(t, url), open(t, url), open(t, url+"&pool_max_conns=1")
	ctx, stop := context.WithCancel(t.Context())
	heard, again := make(chan string, 64), make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		s.Subscribe(ctx, "resume", func(p string) {
			if p != "" {
				heard <- p
				return
			}
			select {
			case again <- struct{}{}:
			default:
			}
		})
	})
	defer func() { stop(); wg.Wait() }()
	hear := func(want string) { t.Helper(); publishUntilHeard(t, pub, "resume", heard, want) }
	hear("before")
	select { // the first LISTEN's resync: the reconnection's is checked below
	case <-again:
	default:
		t.Fatal("the first LISTEN was not announced")
	}
	terminate(t, adm, "LISTEN%")
	for len(heard) > 0 {
		<-heard
	}
	hear("after")
	select {
	case <-again:
	default:
		t.Fatal("the reconnection was not announced")
	}
	if n := others(t, adm, "LISTEN%"); n != 1 {
		t.Fatalf("%d listening", n)
	}
}

// Close while a statement runs, while callers wait for a slot and while
// a LISTEN runs: the statement finishes and its connection is closed,
// the waiters get an error at once, the LISTEN connection ends.
func TestPoolClose(t *testing.T) {
	url := pgtest.Start(t)
	s, adm := open(t, url+"&pool_max_conns=2"), open(t, url+"&pool_max_conns=1")
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { s.Watch(ctx, "closing", func() {}) })
	eventually(t, "the watch listens", func() bool { return others(t, adm, "LISTEN%") == 1 })

	unlock, err := s.Lock(ctx, "ns", "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The statement runs until adm lets go of the advisory lock it waits
	// for, after the waiters are seen to fail.
	const held = 7340033
	if _, err := adm.pool.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(held)); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { _, err := s.pool.Exec(ctx, `SELECT pg_advisory_xact_lock(7340033)`); ran <- err }()
	eventually(t, "the statement runs", func() bool { return others(t, adm, "%pg_advisory_xact_lock(7340033)%") == 1 })
	waited := make(chan error, 3)
	for range 3 {
		go func() { _, err := s.Get(ctx, "ns", "k"); waited <- err }()
	}
	eventually(t, "the callers wait for a slot", func() bool { return waitingForSlot() == 3 })
	s.Close()
	for range 3 {
		select {
		case err := <-waited:
			if !errors.Is(err, errClosed) {
				t.Errorf("a waiter: %v", err)
			}
		case <-ran:
			t.Fatal("a caller waiting for a slot waited after Close until a connection came back")
		case <-time.After(time.Minute): // bounds a hang, not a timing: the statement holds its connection
			t.Fatal("a caller waiting for a slot still waits after Close")
		}
	}
	var unlocked bool
	if err := adm.pool.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, int64(held)).Scan(&unlocked); err != nil || !unlocked {
		t.Fatalf("adm's advisory lock: unlocked %v, %v", unlocked, err)
	}
	if err := <-ran; err != nil {
		t.Errorf("the statement running at Close: %v", err)
	}
	unlock()
	if _, err := s.Get(ctx, "ns", "k"); !errors.Is(err, errClosed) {
		t.Errorf("a Get after Close: %v", err)
	}
	eventually(t, "every connection closes", func() bool { return others(t, adm, "%") == 0 })
	if len(s.pool.slots) != 0 || s.idle() != 0 {
		t.Fatalf("%d slots taken, %d idle", len(s.pool.slots), s.idle())
	}
}

// Values an attacker picks get the server's error, and the connection
// stays good: NUL and invalid UTF-8 in text, a large value.
func TestPoolHostileValues(t *testing.T) {
	s := open(t, pgtest.Start(t)+"&pool_max_conns=1")
	ctx := t.Context()
	for _, key := range []string{"a\x00b", "\xff\xfe", strings.Repeat("é", 10) + "\xc3"} {
		err := s.Put(ctx, "ns", key, []byte("v"))
		if err == nil || !strings.Contains(err.Error(), "invalid byte sequence") {
			t.Errorf("key %q: %v", key, err)
		}
		if err := s.Publish(ctx, "ch", key); err == nil {
			t.Errorf("payload %q published", key)
		}
	}
	big := make([]byte, 32<<20)
	big[0], big[len(big)-1] = 0, 0xff
	if err := s.Put(ctx, "ns", "big", big); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "ns", "big"); err != nil || len(v) != len(big) || v[len(v)-1] != 0xff {
		t.Fatalf("a large value: %d bytes, %v", len(v), err)
	}
	if s.idle() != 1 {
		t.Fatalf("the connection was not kept: %d idle", s.idle())
	}
}

// An idle connection past its idle time or lifetime is closed when
// another comes back, not only when taken: after a burst, steady use of
// one connection leaves no others open for ever.
func TestPoolClosesExpiredIdle(t *testing.T) {
	url := pgtest.Start(t)
	s, adm := open(t, url+"&pool_max_conns=3"), open(t, url+"&pool_max_conns=1")
	busy(t, s, 3)
	s.pool.mu.Lock()
	s.pool.idleTime = 300 * time.Millisecond
	s.pool.mu.Unlock()
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := s.Get(t.Context(), "ns", "k"); !errors.Is(err, shared.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if s.idle() != 1 {
		t.Fatalf("%d idle after steady use of one", s.idle())
	}
	eventually(t, "the server sees one", func() bool { return others(t, adm, "%") == 1 })
}

// pool_max_conns that is not a count is named in the error (never the
// password); the other parameters pgxpool took are accepted and listed as
// ignored, for the caller to warn of.
func TestOpenPoolParams(t *testing.T) {
	url := pgtest.Start(t)
	for _, v := range []string{"0", "-1", "abc", "1.5", "2147483648", ""} {
		_, err := Open(t.Context(), url+"&pool_max_conns="+v+"&password=hunter2")
		if err == nil || !strings.Contains(err.Error(), "pool_max_conns") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("pool_max_conns=%s: %v", v, err)
		}
	}
	s := open(t, url+"&pool_max_conns=3&pool_max_conn_lifetime=1h&pool_min_conns=2&application_name=hub")
	if cap(s.pool.slots) != 3 || !slices.Equal(s.Ignored(), []string{"pool_min_conns", "pool_max_conn_lifetime"}) {
		t.Fatalf("%d slots, ignored %q", cap(s.pool.slots), s.Ignored())
	}
	if s := open(t, url); s.Ignored() != nil {
		t.Fatalf("ignored %q", s.Ignored())
	}
	if s := open(t, url+"&default_query_exec_mode=simple_protocol"); s.Ignored() != nil {
		t.Fatalf("default_query_exec_mode is honoured, not ignored: %q", s.Ignored())
	}
	if _, err := Open(t.Context(), url+"&default_query_exec_mode=fast&password=hunter2"); err == nil ||
		!strings.Contains(err.Error(), "default_query_exec_mode") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("default_query_exec_mode=fast: %v", err)
	}
}

// A statement is prepared once a connection and run by its name from
// then on, as pgx's statement cache did (the server parses and plans it
// once, not at every run: docs/performance.md); with a
// default_query_exec_mode other than pgx's default (a pooler that keeps
// no prepared statement across transactions), none is.
func TestStatementsPreparedOncePerConnection(t *testing.T) {
	url := pgtest.Start(t)
	for _, c := range []struct {
		params string
		want   int64
	}{{"", 1}, {"&default_query_exec_mode=cache_statement", 1}, {"&default_query_exec_mode=exec", 0}} {
		s := open(t, url+"&pool_max_conns=1"+c.params) // one connection: the count below is its own
		for i := range 3 {
			if err := s.Put(t.Context(), "ns", "k", []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := s.Get(t.Context(), "ns", "k"); err != nil || string(v) != "\x02" {
			t.Fatalf("%s: the last put read back as %q, %v", c.params, v, err)
		}
		var n int64
		if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_prepared_statements
			WHERE statement LIKE 'INSERT INTO dynamic_mcp_state %'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("%q: the put prepared %d times on its connection, want %d", c.params, n, c.want)
		}
	}
}

// A connection whose prepared statements the server dropped (a pooler's
// DISCARD ALL, a DEALLOCATE) answers the one call that finds them gone
// with the server's error and prepares them again, under names of their
// own, for the next: it does not fail until it is closed.
func TestStatementsPreparedAgainAfterTheServerDroppedThem(t *testing.T) {
	s := open(t, pgtest.Start(t)+"&pool_max_conns=1") // one connection: the DEALLOCATE is its
	if err := s.Put(t.Context(), "ns", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(t.Context(), "DEALLOCATE ALL"); err != nil {
		t.Fatal(err)
	}
	err := s.Put(t.Context(), "ns", "k", []byte("w"))
	if pe, ok := errors.AsType[*pgconn.PgError](err); err != nil && (!ok || pe.Code != "26000") {
		t.Fatalf("the put after DEALLOCATE ALL: %v, want success or 26000", err)
	}
	for range 2 {
		if err := s.Put(t.Context(), "ns", "k", []byte("x")); err != nil {
			t.Fatalf("a put once the statements were prepared again: %v", err)
		}
	}
	if v, err := s.Get(t.Context(), "ns", "k"); err != nil || string(v) != "x" {
		t.Fatalf("read back %q, %v, want x", v, err)
	}
}
