package pgstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The store talks to PostgreSQL through pgconn, pgx's protocol layer,
// with the little of pgx and pgxpool it used written here: a bounded pool,
// statements with their parameters in text (bytea in binary) and the
// results in binary, decoded for the few column types the store reads,
// transactions and batches. pgx's type system (pgtype: a codec for every
// PostgreSQL type, registered at init) was 1.3 MB of the binary for a
// store most hubs never configure.

// errNoRows is QueryRow's Scan when the statement returned no row.
var errNoRows = errors.New("no rows in result set")

// errClosed is what a closed pool's callers get, those that were waiting
// for a slot when it closed included.
var errClosed = errors.New("closed pool")

// The pool's defaults, pgxpool's.
const (
	maxConnLifetime = time.Hour
	maxConnIdleTime = 30 * time.Minute
	// pingAfterIdle: a connection idle for longer is pinged before use, so
	// that one the server closed meanwhile (a restart) is replaced. One
	// idle for less is pinged only when its socket has something to read
	// (quiet): a backend the server ended sent its error and closed.
	pingAfterIdle = time.Second
)

// poolParams are the parameters of the connection string pgx and pgxpool
// took for themselves: they are not the server's, so they are not sent to
// it. pool_max_conns and default_query_exec_mode are honoured (the others
// shaped pgx's caches and the pool's idle connections, which this pool
// does not keep): the others given are the pool's ignored, which Open's
// caller logs.
var poolParams = []string{"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_idle_time", "pool_health_check_period", "pool_max_conn_lifetime_jitter",
	"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode"}

// execModes are pgx's values of default_query_exec_mode: its default,
// cache_statement, prepares each statement once a connection (prepared);
// any other runs each unnamed, parsed at every run, as a pooler that
// keeps no prepared statement across transactions (PgBouncer before 1.21
// in transaction mode) needs.
var execModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

// pool is a bounded set of connections to one database.
type pool struct {
	cfg     *pgconn.Config
	slots   chan struct{} // one per connection in use
	ignored []string      // poolParams given but not honoured
	// life ends at Close: it wakes the callers waiting for a slot and
	// ends the LISTEN connections (Store.listenOnce).
	life context.Context
	end  context.CancelFunc
	// lifetime and idleTime bound a connection's age and time idle
	// (maxConnLifetime, maxConnIdleTime; tests set less).
	lifetime, idleTime time.Duration
	mu                 sync.Mutex
	idle               []idleConn
	opened             map[*pgconn.PgConn]time.Time // when each in use was opened
	done               bool
}

type idleConn struct {
	pc          *pgconn.PgConn
	born, since time.Time
}

// parsePool parses a connection string (a URL or key=value pairs, as
// pgconn takes it), with pool_max_conns bounding the pool (by default the
// larger of 4 and the number of CPUs, as pgxpool's).
func parsePool(url string) (*pool, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	size := max(4, runtime.NumCPU())
	if v, ok := cfg.RuntimeParams["pool_max_conns"]; ok {
		// pgxpool's bound: a 32-bit count.
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return nil, errPoolMaxConns
		}
		size = int(n)
	}
	p := &pool{cfg: cfg, slots: make(chan struct{}, size), opened: map[*pgconn.PgConn]time.Time{},
		lifetime: maxConnLifetime, idleTime: maxConnIdleTime}
	if v, ok := cfg.RuntimeParams["default_query_exec_mode"]; ok && v != "cache_statement" {
		if !slices.Contains(execModes, v) {
			return nil, errExecMode
		}
		cfg.AfterConnect = func(_ context.Context, pc *pgconn.PgConn) error {
			pc.CustomData()[preparedKey] = false // none prepared
			return nil
		}
	}
	for _, k := range poolParams {
		if _, ok := cfg.RuntimeParams[k]; ok && k != "pool_max_conns" && k != "default_query_exec_mode" {
			p.ignored = append(p.ignored, k)
		}
		delete(cfg.RuntimeParams, k)
	}
	p.life, p.end = context.WithCancel(context.Background())
	return p, nil
}

// errPoolMaxConns is parsePool's error for a pool_max_conns that is not a
// count: it names the parameter, which the URL's other errors (they may
// quote the password) do not.
var errPoolMaxConns = errors.New("pool_max_conns is not a whole number from 1 to 2147483647")

// errExecMode is parsePool's error for a default_query_exec_mode that is
// not one of execModes.
var errExecMode = errors.New("default_query_exec_mode is not one of " + strings.Join(execModes, ", "))

// acquire takes a connection: an idle one (pinged first when it was idle
// for long or its socket has something to read), or a new one when none
// is idle, waiting for a slot when as many are in use as the pool holds.
func (p *pool) acquire(ctx context.Context) (*pgconn.PgConn, error) {
	// A caller whose ctx ended takes nothing: a select with both ready
	// picks at random, and a ping on a done ctx fails on a healthy
	// connection, which would be closed for it.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.takeSlot(ctx); err != nil {
		return nil, err
	}
	for {
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			<-p.slots
			return nil, errClosed
		}
		var ic idleConn
		if n := len(p.idle); n > 0 {
			ic, p.idle = p.idle[n-1], p.idle[:n-1]
		}
		p.mu.Unlock()
		if ic.pc == nil {
			break
		}
		p.mu.Lock()
		p.opened[ic.pc] = ic.born
		p.mu.Unlock()
		now := time.Now()
		if ic.pc.IsClosed() || p.expired(ic, now) ||
			((now.Sub(ic.since) > pingAfterIdle || !quiet(ic.pc.Conn())) && ic.pc.Ping(ctx) != nil) {
			if ctx.Err() != nil {
				// The ping was cut short, not refused: the connection
				// is closed if it was cut mid-way, kept if not begun.
				p.release(ic.pc)
				return nil, ctx.Err()
			}
			p.mu.Lock()
			delete(p.opened, ic.pc)
			p.mu.Unlock()
			closeConn(ic.pc)
			continue
		}
		return ic.pc, nil
	}
	pc, err := pgconn.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.mu.Lock()
	p.opened[pc] = time.Now()
	p.mu.Unlock()
	return pc, nil
}

// takeSlot waits for a slot (a connection in use, counted), until ctx
// ends or the pool closes.
func (p *pool) takeSlot(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.life.Done():
		return errClosed
	}
}

// expired says whether ic is older than the pool's lifetime or was idle
// for longer than its idleTime.
func (p *pool) expired(ic idleConn, now time.Time) bool {
	return now.Sub(ic.born) > p.lifetime || now.Sub(ic.since) > p.idleTime
}

// closeConn closes pc, waiting at most a second for the server.
func closeConn(pc *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	pc.Close(ctx)
}

// release gives pc back: idle again, or closed when it broke, is in a
// transaction still or the pool is closed. The idle connections that
// expired meanwhile are closed with it: acquire takes the newest idle
// one, so those beneath it after a burst would never be looked at again.
// The slot is freed before they are closed: each close may wait a second
// for the server, and a caller waiting for a slot need not wait on that.
func (p *pool) release(pc *pgconn.PgConn) {
	now := time.Now()
	p.mu.Lock()
	born := p.opened[pc]
	delete(p.opened, pc)
	var gone []*pgconn.PgConn
	if !p.done && !pc.IsClosed() && pc.TxStatus() == 'I' {
		p.idle = append(p.idle, idleConn{pc: pc, born: born, since: now})
	} else {
		gone = append(gone, pc)
	}
	kept := p.idle[:0]
	for _, ic := range p.idle {
		if p.expired(ic, now) {
			gone = append(gone, ic.pc)
		} else {
			kept = append(kept, ic)
		}
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	p.mu.Unlock()
	<-p.slots
	for _, pc := range gone {
		closeConn(pc)
	}
}

// Close closes the idle connections, and each in use when it comes back;
// the callers waiting for a slot get errClosed, and the LISTEN
// connections end.
func (p *pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.done = nil, true
	p.mu.Unlock()
	p.end()
	for _, ic := range idle {
		closeConn(ic.pc)
	}
}

// Ping checks that the database answers.
func (p *pool) Ping(ctx context.Context) error {
	pc, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(pc)
	return pc.Ping(ctx)
}

// with runs fn on a connection of the pool.
func (p *pool) with(ctx context.Context, fn func(pc *pgconn.PgConn) error) error {
	pc, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(pc)
	return fn(pc)
}

// Exec, QueryRow and Query run one statement on a connection of the pool.
func (p *pool) Exec(ctx context.Context, sql string, args ...any) (res *pgconn.Result, err error) {
	err = p.with(ctx, func(pc *pgconn.PgConn) error { res, err = execParams(ctx, pc, sql, args); return err })
	return res, err
}

func (p *pool) QueryRow(ctx context.Context, sql string, args ...any) row {
	return rowOf(p.Exec(ctx, sql, args...))
}

func (p *pool) Query(ctx context.Context, sql string, args ...any) (*rows, error) {
	return rowsOf(p.Exec(ctx, sql, args...))
}

// tx is a transaction on a connection of the pool.
type tx struct {
	p  *pool
	pc *pgconn.PgConn
}

// begin starts a transaction on a connection of the pool.
func (p *pool) begin(ctx context.Context) (*tx, error) {
	pc, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := pc.Exec(ctx, "begin").ReadAll(); err != nil {
		p.release(pc)
		return nil, err
	}
	return &tx{p: p, pc: pc}, nil
}

// beginFunc runs fn in a transaction, committed when fn returns nil and
// rolled back when it fails or panics, as pgx.BeginFunc did.
func (p *pool) beginFunc(ctx context.Context, fn func(*tx) error) (err error) {
	t, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if t.pc != nil {
			rerr := t.Rollback(ctx)
			if err == nil && rerr != nil {
				err = rerr
			}
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	return t.Commit(ctx)
}

// end sends COMMIT or ROLLBACK and gives the connection back.
func (t *tx) end(ctx context.Context, sql string) (string, error) {
	if t.pc == nil {
		return "", errors.New("tx is closed")
	}
	pc := t.pc
	t.pc = nil
	defer t.p.release(pc)
	res, err := pc.Exec(ctx, sql).ReadAll()
	if err != nil {
		return "", err
	}
	return res[len(res)-1].CommandTag.String(), nil
}

// Commit commits; a transaction that had failed is rolled back instead,
// which is an error.
func (t *tx) Commit(ctx context.Context) error {
	tag, err := t.end(ctx, "commit")
	if err == nil && tag == "ROLLBACK" {
		return errors.New("commit unexpectedly resulted in rollback")
	}
	return err
}

// Rollback rolls back.
func (t *tx) Rollback(ctx context.Context) error {
	_, err := t.end(ctx, "rollback")
	return err
}

func (t *tx) Exec(ctx context.Context, sql string, args ...any) (*pgconn.Result, error) {
	if t.pc == nil {
		return nil, errors.New("tx is closed")
	}
	return execParams(ctx, t.pc, sql, args)
}

func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) row {
	return rowOf(t.Exec(ctx, sql, args...))
}

func (t *tx) Query(ctx context.Context, sql string, args ...any) (*rows, error) {
	return rowsOf(t.Exec(ctx, sql, args...))
}

// execParams runs one statement (the extended protocol, one round trip,
// prepared on pc the first time: prepared) and reads its whole result.
func execParams(ctx context.Context, pc *pgconn.PgConn, sql string, args []any) (*pgconn.Result, error) {
	values, oids, formats, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	sd, err := prepared(ctx, pc, sql, oids)
	if err != nil {
		return nil, err
	}
	var res *pgconn.Result
	if sd != nil {
		res = pc.ExecStatement(ctx, sd, values, formats, binaryResults).Read()
	} else {
		res = pc.ExecParams(ctx, sql, values, oids, formats, binaryResults).Read()
	}
	forgetPrepared(pc, res.Err)
	return res, res.Err
}

// maxPrepared bounds the statements prepared on a connection; a statement
// beyond them is parsed each time it runs. The store's statements are
// constants, fewer than this.
const maxPrepared = 128

// preparedKey is where a connection keeps its prepared statements, in its
// CustomData: each one's description (its name and result's columns), by
// its SQL and its arguments' types.
const preparedKey = "dynamic-mcp.prepared"

// preparedGenKey is where a connection keeps how many times it forgot
// its prepared statements (forgetPrepared), in its CustomData: part of
// each name, so that a statement prepared again is not refused for a
// name the server still holds.
const preparedGenKey = "dynamic-mcp.prepared-gen"

// forgetPrepared drops pc's prepared statements when err says the server
// no longer runs them as they were prepared: 26000, a statement it does
// not know (a DEALLOCATE or DISCARD ALL, a pooler's); 0A000, a cached
// plan whose result changed (a table's columns changed). Each is prepared
// again, under a new name, when it next runs.
func forgetPrepared(pc *pgconn.PgConn, err error) {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	if !ok || pe.Code != "26000" && pe.Code != "0A000" {
		return
	}
	data := pc.CustomData()
	if stmts, _ := data[preparedKey].(map[string]*pgconn.StatementDescription); stmts != nil {
		delete(data, preparedKey)
		gen, _ := data[preparedGenKey].(int)
		data[preparedGenKey] = gen + 1
	}
}

// preparedName is the name of the statement key on a connection that
// forgot its statements gen times: by a hash of the statement, as pgx
// names them, so that the same name is the same statement on every
// connection (behind a pooler that moves a session's statements between
// server connections, a name meets its own statement or none, never
// another one), and under PostgreSQL's 63 bytes.
func preparedName(key string, gen int) string {
	sum := sha256.Sum256([]byte(key))
	return "dynamic_mcp_" + strconv.Itoa(gen) + "_" + hex.EncodeToString(sum[:16])
}

// prepared returns sql, with arguments of the types oids, prepared on pc:
// on the first use on pc it is prepared (one round trip more), from then
// on it is run by its name, without asking for its columns again, so that
// the server parses and plans it once a connection rather than at every
// run, as pgx's statement cache did before the store moved to pgconn. Without it a notification through
// the store cost PostgreSQL several times the CPU (docs/performance.md,
// "Notifications through the store"). nil with no error: run sql unnamed
// (pc holds maxPrepared already, or the connection string's
// default_query_exec_mode asks for none prepared). A connection is used by one
// caller at a time, so its map needs no lock. A prepared statement is
// not part of a transaction: one prepared in a transaction that rolls
// back stays.
func prepared(ctx context.Context, pc *pgconn.PgConn, sql string, oids []uint32) (*pgconn.StatementDescription, error) {
	data := pc.CustomData()
	if data[preparedKey] == false {
		return nil, nil // default_query_exec_mode: none prepared
	}
	stmts, _ := data[preparedKey].(map[string]*pgconn.StatementDescription)
	if stmts == nil {
		stmts = map[string]*pgconn.StatementDescription{}
		data[preparedKey] = stmts
	}
	key := sql
	for _, o := range oids {
		key += "\x00" + strconv.FormatUint(uint64(o), 10)
	}
	if sd, ok := stmts[key]; ok {
		return sd, nil
	}
	if len(stmts) >= maxPrepared {
		return nil, nil
	}
	gen, _ := data[preparedGenKey].(int)
	sd, err := pc.Prepare(ctx, preparedName(key, gen), sql, oids)
	if err != nil {
		return nil, err
	}
	stmts[key] = sd
	return sd, nil
}

// binaryResults asks every result column in binary.
var binaryResults = []int16{1}

// batch is statements sent together, as pgx.Batch: in one round trip and
// one implicit transaction (each prepared first on the connection that
// runs it, where it was not yet: prepared).
type batch struct {
	stmts []queued
	err   error
}

type queued struct {
	sql     string
	values  [][]byte
	oids    []uint32
	formats []int16
}

func (b *batch) Queue(sql string, args ...any) {
	values, oids, formats, err := encodeArgs(args)
	if err != nil {
		b.err = cmp.Or(b.err, err)
		return
	}
	b.stmts = append(b.stmts, queued{sql, values, oids, formats})
}

// SendBatch runs b and returns the results of its statements.
func (p *pool) SendBatch(ctx context.Context, b *batch) (res []*pgconn.Result, err error) {
	if b.err != nil {
		return nil, b.err
	}
	err = p.with(ctx, func(pc *pgconn.PgConn) error {
		var pb pgconn.Batch
		for _, q := range b.stmts {
			sd, err := prepared(ctx, pc, q.sql, q.oids)
			switch {
			case err != nil:
				return err
			case sd != nil:
				pb.ExecStatement(sd, q.values, q.formats, binaryResults)
			default:
				pb.ExecParams(q.sql, q.values, q.oids, q.formats, binaryResults)
			}
		}
		res, err = pc.ExecBatch(ctx, &pb).ReadAll()
		forgetPrepared(pc, err)
		return err
	})
	return res, err
}

// encodeArgs writes each argument as the server reads it: text with the
// type left for the server to infer (as pgx's prepared statements had it
// inferred), but bytea, in binary.
func encodeArgs(args []any) (values [][]byte, oids []uint32, formats []int16, err error) {
	values, oids, formats = make([][]byte, len(args)), make([]uint32, len(args)), make([]int16, len(args))
	for i, a := range args {
		var s string
		switch v := a.(type) {
		case nil:
			continue // NULL
		case []byte:
			if v == nil {
				continue
			}
			values[i], oids[i], formats[i] = v, byteaOID, 1
			continue
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		case int32:
			s = strconv.FormatInt(int64(v), 10)
		case uint64:
			s = strconv.FormatUint(v, 10)
		case float64:
			s = strconv.FormatFloat(v, 'g', -1, 64)
		case time.Time:
			s = v.UTC().Format("2006-01-02 15:04:05.999999-07")
		default:
			return nil, nil, nil, fmt.Errorf("pgstore: cannot encode %T", a)
		}
		values[i] = []byte(s)
	}
	return values, oids, formats, nil
}

// The type OIDs the store reads.
const (
	boolOID    = 16
	byteaOID   = 17
	nameOID    = 19
	int8OID    = 20
	int2OID    = 21
	int4OID    = 23
	textOID    = 25
	float4OID  = 700
	float8OID  = 701
	varcharOID = 1043
)

// row is QueryRow's result: its first row, scanned.
type row struct {
	res *pgconn.Result
	err error
}

// rowOf is the result of Exec read as QueryRow's (on the pool or a
// transaction).
func rowOf(res *pgconn.Result, err error) row { return row{res, err} }

// rowsOf is the result of Exec read as Query's.
func rowsOf(res *pgconn.Result, err error) (*rows, error) {
	if err != nil {
		return nil, err
	}
	return &rows{res: res, i: -1}, nil
}

// Scan reads the first row into dst (errNoRows without one).
func (r row) Scan(dst ...any) error {
	if r.err != nil {
		return r.err
	}
	if len(r.res.Rows) == 0 {
		return errNoRows
	}
	return scan(r.res.FieldDescriptions, r.res.Rows[0], dst)
}

// rows is Query's result, read a row at a time.
type rows struct {
	res *pgconn.Result
	i   int
	err error
}

func (r *rows) Next() bool {
	if r.err != nil || r.i+1 >= len(r.res.Rows) {
		return false
	}
	r.i++
	return true
}

func (r *rows) Scan(dst ...any) error {
	if r.i < 0 || r.i >= len(r.res.Rows) {
		return errors.New("no row to scan")
	}
	if err := scan(r.res.FieldDescriptions, r.res.Rows[r.i], dst); err != nil {
		r.err = err
		return err
	}
	return nil
}

func (r *rows) Err() error { return r.err }
func (r *rows) Close()     {}

// collectStrings reads the first column of every row as a string.
func collectStrings(r *rows) ([]string, error) {
	out := []string{}
	for r.Next() {
		var s string
		if err := r.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, r.Err()
}

// scan decodes a row's binary values into dst, one per column.
func scan(fields []pgconn.FieldDescription, values [][]byte, dst []any) error {
	if len(dst) != len(values) {
		return fmt.Errorf("number of field descriptions must equal number of destinations, got %d and %d", len(values), len(dst))
	}
	for i, d := range dst {
		if err := decode(fields[i].DataTypeOID, values[i], d); err != nil {
			return fmt.Errorf("can't scan into dest[%d] (col: %s): %w", i, fields[i].Name, err)
		}
	}
	return nil
}

// decode puts one binary value of type oid into dst.
func decode(oid uint32, v []byte, dst any) error {
	if p, ok := dst.(**int); ok {
		if v == nil {
			*p = nil
			return nil
		}
		n := new(int)
		*p = n
		dst = n
	}
	if v == nil {
		if b, ok := dst.(*[]byte); ok {
			*b = nil
			return nil
		}
		return fmt.Errorf("cannot scan NULL into %T", dst)
	}
	switch d := dst.(type) {
	case *string:
		switch oid {
		case textOID, varcharOID, nameOID:
			*d = string(v)
			return nil
		}
	case *[]byte:
		if oid == byteaOID || oid == textOID || oid == varcharOID {
			*d = append([]byte(nil), v...)
			return nil
		}
	case *bool:
		if oid == boolOID && len(v) == 1 {
			*d = v[0] != 0
			return nil
		}
	case *float64:
		switch {
		case oid == float8OID && len(v) == 8:
			*d = math.Float64frombits(binary.BigEndian.Uint64(v))
			return nil
		case oid == float4OID && len(v) == 4:
			*d = float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
			return nil
		}
	case *int64:
		if n, ok := decodeInt(oid, v); ok {
			*d = n
			return nil
		}
	case *int:
		if n, ok := decodeInt(oid, v); ok && n == int64(int(n)) {
			*d = int(n)
			return nil
		}
	}
	return fmt.Errorf("cannot scan a value of type OID %d into %T", oid, dst)
}

func decodeInt(oid uint32, v []byte) (int64, bool) {
	switch {
	case oid == int8OID && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v)), true
	case oid == int4OID && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v))), true
	case oid == int2OID && len(v) == 2:
		return int64(int16(binary.BigEndian.Uint16(v))), true
	}
	return 0, false
}

// quoteIdentifier quotes a name for SQL, as pgx.Identifier.Sanitize did.
func quoteIdentifier(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), `"`, `""`) + `"`
}

// listener is a connection of its own that LISTENs, with the
// notifications that arrived while it did something else queued.
type listener struct {
	pc     *pgconn.PgConn
	mu     sync.Mutex // guards queue and missed
	queue  []*pgconn.Notification
	missed bool // a notification was dropped, the queue full, since wait last said so
}

// maxListenQueue bounds the notifications a listener queues while it does
// something else (Subscribe reads a large payload's row on it): beyond
// it they are dropped, and the next wait says so, so that its caller acts
// as after a reconnection, which may miss notifications too (the relay's
// inbox does the same on overflow: server/relay). A payload is under
// 8000 bytes (the server's limit): the queue holds at most about 32 MB.
const maxListenQueue = 4096

// heard queues n, or drops it when the queue is full.
func (l *listener) heard(n *pgconn.Notification) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) >= maxListenQueue {
		l.missed = true
		return
	}
	l.queue = append(l.queue, n)
}

// listen opens a listener's connection, counted against the pool while
// it connects (as pgxpool's Acquire then Hijack had it).
func (p *pool) listen(ctx context.Context) (*listener, error) {
	if err := p.takeSlot(ctx); err != nil {
		return nil, err
	}
	defer func() { <-p.slots }()
	if p.life.Err() != nil {
		return nil, errClosed
	}
	l := &listener{}
	cfg := p.cfg.Copy()
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) { l.heard(n) }
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l.pc = pc
	return l, nil
}

// wait returns the next notification, and whether notifications were
// dropped since it last said so (see maxListenQueue).
func (l *listener) wait(ctx context.Context) (n *pgconn.Notification, missed bool, err error) {
	for {
		l.mu.Lock()
		if len(l.queue) > 0 {
			n = l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			missed, l.missed = l.missed, false
			l.mu.Unlock()
			return n, missed, nil
		}
		l.mu.Unlock()
		if err := l.pc.WaitForNotification(ctx); err != nil {
			return nil, false, err
		}
	}
}
