// Package pgstore keeps the hub's shared state in PostgreSQL
// (`store: postgres://...`), through a bounded pool of pgconn connections (pg.go): one
// table of values by namespace and key, and transaction-scoped advisory
// locks (pg_advisory_xact_lock on a hash of the key) for what must happen
// once across replicas.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// SchemaVersion is the version of the tables this build makes and reads:
// 2 added the relay's tables (server/relay), which a database of version 1
// gets when a replica of this build starts on it.
const SchemaVersion = 2

// connectWait bounds how long Open waits for the database to answer.
const connectWait = 10 * time.Second

// schemaLock is the advisory lock that makes replicas starting together
// create the tables one at a time.
const schemaLock = 0x646d6370 // "dmcp"

var schema = []string{
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_schema (version integer NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_state (
		ns text NOT NULL,
		key text NOT NULL,
		value bytea NOT NULL,
		updated timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (ns, key))`,
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_rate (
		key text PRIMARY KEY,
		calls integer NOT NULL,
		period_us bigint NOT NULL,
		tokens double precision NOT NULL,
		took boolean NOT NULL,
		last timestamptz NOT NULL)`,
}

// Store is the shared state in one PostgreSQL database.
type Store struct {
	pool  *pool
	where string       // host:port/database, for messages: never the password
	takes atomic.Int64 // Take's calls, to prune every pruneEvery

	appended atomic.Int64 // events appended, to prune dynamic_mcp_events (server/relay)
	// eventsTotal is the bound of all streams' events in bytes;
	// 0: shared.MaxEventsTotal (tests set less).
	eventsTotal int64
	// relayTotal is the bound of the rows of large payloads in bytes;
	// 0: relayBytes (tests set less).
	relayTotal int64
}

var _ shared.Store = (*Store)(nil)

// Open connects to the database at url (postgres://user@host/db?...;
// pool_max_conns bounds the pool, by default the larger of 4 and the
// number of CPUs), checks that it answers within connectWait, and creates
// the tables when they are missing. A database whose tables a newer
// version made is refused.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := parsePool(url)
	if errors.Is(err, errPoolMaxConns) || errors.Is(err, errExecMode) {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err != nil {
		// pgconn's parse errors can quote the URL, password and all.
		return nil, errors.New("store: not a PostgreSQL connection URL")
	}
	where := fmt.Sprintf("%s:%d/%s", pool.cfg.Host, pool.cfg.Port, pool.cfg.Database)
	ctx, cancel := context.WithTimeout(ctx, connectWait)
	defer cancel()
	s := &Store{pool: pool, where: where}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: cannot reach the database at %s: %w", where, err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: the database at %s: %w", where, err)
	}
	return s, nil
}

// migrate creates the tables and the schema version row, under
// schemaLock so that replicas starting together do not race.
func (s *Store) migrate(ctx context.Context) error {
	return s.pool.beginFunc(ctx, func(tx *tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLock)); err != nil {
			return err
		}
		for _, q := range append(schema[:len(schema):len(schema)], relaySchema...) {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("create the tables: %w", err)
			}
		}
		var v *int // NULL: no row yet
		if err := tx.QueryRow(ctx, `SELECT max(version) FROM dynamic_mcp_schema`).Scan(&v); err != nil {
			return err
		}
		switch {
		case v == nil:
			_, err := tx.Exec(ctx, `INSERT INTO dynamic_mcp_schema (version) VALUES ($1)`, SchemaVersion)
			return err
		case *v > SchemaVersion:
			return fmt.Errorf("its tables are of schema version %d, made by a newer dynamic-mcp (this one knows %d)", *v, SchemaVersion)
		case *v < SchemaVersion:
			// The tables this version added were just created.
			_, err := tx.Exec(ctx, `UPDATE dynamic_mcp_schema SET version = $1`, SchemaVersion)
			return err
		}
		return nil
	})
}

// Where names the database (host:port/database) without credentials.
func (s *Store) Where() string { return s.where }

// Ignored are the parameters of the URL that pgxpool honoured and this
// store accepts but ignores (pool_min_conns, ...), for the caller to warn
// of; nil when there are none.
func (s *Store) Ignored() []string { return s.pool.ignored }

// Close lets go of the pool's connections.
func (s *Store) Close() { s.pool.Close() }

// querier is what a pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (*pgconn.Result, error)
	QueryRow(ctx context.Context, sql string, args ...any) row
	Query(ctx context.Context, sql string, args ...any) (*rows, error)
}

func get(ctx context.Context, q querier, ns, key string) ([]byte, error) {
	var v []byte
	err := q.QueryRow(ctx, `SELECT value FROM dynamic_mcp_state WHERE ns = $1 AND key = $2`, ns, key).Scan(&v)
	if errors.Is(err, errNoRows) {
		return nil, shared.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: read %s/%s: %w", ns, key, err)
	}
	return v, nil
}

func put(ctx context.Context, q querier, ns, key string, value []byte) error {
	_, err := q.Exec(ctx, `INSERT INTO dynamic_mcp_state (ns, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, updated = now()`, ns, key, value)
	if err != nil {
		return fmt.Errorf("store: write %s/%s: %w", ns, key, err)
	}
	return nil
}

func del(ctx context.Context, q querier, ns, key string) error {
	if _, err := q.Exec(ctx, `DELETE FROM dynamic_mcp_state WHERE ns = $1 AND key = $2`, ns, key); err != nil {
		return fmt.Errorf("store: delete %s/%s: %w", ns, key, err)
	}
	return nil
}

// Get returns the value of ns/key, or shared.ErrNotFound.
func (s *Store) Get(ctx context.Context, ns, key string) ([]byte, error) {
	return get(ctx, s.pool, ns, key)
}

// Put sets the value of ns/key.
func (s *Store) Put(ctx context.Context, ns, key string, value []byte) error {
	return put(ctx, s.pool, ns, key, value)
}

// Delete removes ns/key.
func (s *Store) Delete(ctx context.Context, ns, key string) error {
	return del(ctx, s.pool, ns, key)
}

// Keys are ns's keys, in byte order.
func (s *Store) Keys(ctx context.Context, ns string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT key FROM dynamic_mcp_state WHERE ns = $1 ORDER BY key COLLATE "C"`, ns)
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", ns, err)
	}
	keys, err := collectStrings(rows)
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", ns, err)
	}
	return keys, nil
}

// All are ns's keys and values.
func (s *Store) All(ctx context.Context, ns string) (map[string][]byte, error) {
	return all(ctx, s.pool, ns)
}

// all are ns's keys and values, read through q (the pool or a transaction).
func all(ctx context.Context, q querier, ns string) (map[string][]byte, error) {
	rows, err := q.Query(ctx, `SELECT key, value FROM dynamic_mcp_state WHERE ns = $1`, ns)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", ns, err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("store: read %s: %w", ns, err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read %s: %w", ns, err)
	}
	return out, nil
}

// refill is a bucket's tokens brought up to the statement's time: full
// when its rate changed.
const refill = `(CASE WHEN r.calls = $2::integer AND r.period_us = $3::bigint
	THEN least($2::integer::float8, r.tokens +
		greatest(0::float8, extract(epoch FROM now() - r.last)::float8) * 1e6::float8 * $2::integer::float8 / $3::bigint::float8)
	ELSE $2::integer::float8 END)`

// takeSQL refills and takes from a bucket in one statement: the row's
// lock orders the replicas' takes, the database's clock the refill.
const takeSQL = `INSERT INTO dynamic_mcp_rate AS r (key, calls, period_us, tokens, took, last)
	VALUES ($1, $2::integer, $3::bigint, $2::integer::float8 - 1, true, now())
	ON CONFLICT (key) DO UPDATE SET
		tokens = CASE WHEN ` + refill + ` >= 1 THEN ` + refill + ` - 1 ELSE ` + refill + ` END,
		took = ` + refill + ` >= 1,
		calls = $2::integer, period_us = $3::bigint, last = now()
	RETURNING tokens, took`

// pruneEvery is how many takes of a replica go between two prunes.
const pruneEvery = 256

// prune deletes the buckets untouched for longer than their period: they
// have refilled, and a missing bucket starts full, so nothing changes for
// anyone but the table's size (a row per rule and caller ever seen).
func (s *Store) prune(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM dynamic_mcp_rate WHERE last < now() - period_us * interval '1 microsecond'`)
	return err
}

// Take takes a token from the bucket key (a row of dynamic_mcp_rate).
func (s *Store) Take(ctx context.Context, key string, calls int, period time.Duration) (float64, bool, error) {
	if calls < 1 || period <= 0 {
		return 0, false, fmt.Errorf("store: bucket %s: a rate is at least 1 call per positive period", key)
	}
	if s.takes.Add(1)%pruneEvery == 0 {
		_ = s.prune(ctx) // best effort: the next round tries again
	}
	var tokens float64
	var ok bool
	if err := s.pool.QueryRow(ctx, takeSQL, key, calls, period.Microseconds()).Scan(&tokens, &ok); err != nil {
		return 0, false, fmt.Errorf("store: bucket %s: %w", key, err)
	}
	return tokens, ok, nil
}

// Notify sends a notification on channel (pg_notify).
func (s *Store) Notify(ctx context.Context, channel string) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, channel); err != nil {
		return fmt.Errorf("store: notify %s: %w", channel, err)
	}
	return nil
}

// watchRetry is how long Watch waits before it connects again.
const watchRetry = time.Second

// Watch LISTENs on channel on a connection of its own, taken from the
// pool and closed when it is done, and calls fn for each notification.
func (s *Store) Watch(ctx context.Context, channel string, fn func()) {
	s.listen(ctx, channel, fn, func(*pgconn.PgConn, string) error { fn(); return nil })
}

// listen LISTENs on channel, connecting again (after watchRetry) when
// its connection fails, until ctx ends: each notification's payload goes
// to note (with the connection, for a read; an error ends the
// connection), and again is called once each LISTEN is in place, the
// first included, since a change notified before it was not heard (at
// start: a change another replica made between what the caller read
// before it watched and the LISTEN, milliseconds that can hold an
// approval's answer), and when the connection dropped notifications that
// came while note read (maxListenQueue).
//
// The first again costs each watcher at most a read at start, when the
// replica holds little: pins, one read per server already up; grants and
// the relay, nothing unless calls or sessions are held already; pending
// approvals, one read of the pending calls; the secrets, a reload of the
// config only when it uses one of the store's (cmd's watchSharedSecrets).
func (s *Store) listen(ctx context.Context, channel string, again func(), note func(conn *pgconn.PgConn, payload string) error) {
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-time.After(watchRetry):
			}
		}
		s.listenOnce(ctx, channel, again, note)
	}
}

// listenOnce is one connection of listen: it returns when the
// connection fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, channel string, again func(), note func(*pgconn.PgConn, string) error) {
	l, err := s.pool.listen(ctx) // a connection of its own: it listens
	if err != nil {
		return
	}
	defer closeConn(l.pc)
	// The store's Close ends the connection too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.pool.life, cancel)()
	if _, err := l.pc.Exec(ctx, "LISTEN "+quoteIdentifier(channel)).ReadAll(); err != nil {
		return
	}
	again()
	for {
		n, missed, err := l.wait(ctx)
		if err != nil {
			return
		}
		if missed {
			again()
		}
		if note(l.pc, n.Payload) != nil {
			return
		}
	}
}

// Locked runs fn in a transaction that first takes the advisory lock of
// ns/key (pg_advisory_xact_lock of its 64-bit hash), waiting at most wait
// (lock_timeout); the lock goes with the transaction's end.
func (s *Store) Locked(ctx context.Context, ns, key string, wait time.Duration, fn func(tx shared.Tx) error) error {
	return s.pool.beginFunc(ctx, func(tx *tx) error {
		if err := lockTx(ctx, tx, ns, key, wait); err != nil {
			return err
		}
		return fn(txStore{tx})
	})
}

// Lock takes the advisory lock of ns/key in a transaction of its own,
// which unlock ends (rolls back: it wrote nothing). A connection that
// breaks lets go of the lock with it.
func (s *Store) Lock(ctx context.Context, ns, key string, wait time.Duration) (func(), error) {
	tx, err := s.pool.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: lock %s/%s: %w", ns, key, err)
	}
	if err := lockTx(ctx, tx, ns, key, wait); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectWait)
		defer cancel()
		_ = tx.Rollback(ctx)
	}, nil
}

// lockTx takes the advisory lock of ns/key in tx, waiting at most wait.
func lockTx(ctx context.Context, tx *tx, ns, key string, wait time.Duration) error {
	if wait > 0 {
		ms := strconv.FormatInt(max(wait.Milliseconds(), 1), 10)
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, ms); err != nil {
			return fmt.Errorf("store: lock %s/%s: %w", ns, key, err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, ns+"/"+key); err != nil {
		return fmt.Errorf("store: lock %s/%s: %w", ns, key, err)
	}
	return nil
}

// txStore is a shared.Tx in one PostgreSQL transaction.
type txStore struct{ tx *tx }

func (t txStore) Get(ctx context.Context, ns, key string) ([]byte, error) {
	return get(ctx, t.tx, ns, key)
}

func (t txStore) Put(ctx context.Context, ns, key string, value []byte) error {
	return put(ctx, t.tx, ns, key, value)
}

func (t txStore) Delete(ctx context.Context, ns, key string) error { return del(ctx, t.tx, ns, key) }

func (t txStore) All(ctx context.Context, ns string) (map[string][]byte, error) {
	return all(ctx, t.tx, ns)
}

var _ shared.Namespaces = (*Store)(nil)

// Namespaces are the namespaces that start with prefix and hold a value,
// in byte order.
func (s *Store) Namespaces(ctx context.Context, prefix string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ns COLLATE "C" FROM dynamic_mcp_state WHERE left(ns, length($1)) = $1 ORDER BY 1`, prefix)
	if err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	out, err := collectStrings(rows)
	if err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	return out, nil
}
