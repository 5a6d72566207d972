package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// The relay between replicas (shared.Relay) in PostgreSQL: messages are
// NOTIFY payloads, and one too large for a NOTIFY (the server takes under
// 8000 bytes) is a row of dynamic_mcp_relay whose id the NOTIFY carries,
// read by every listener at once and pruned after relayRowAge or beyond
// relayRows rows. A GET stream's events are rows of dynamic_mcp_events,
// numbered by a counter row of dynamic_mcp_streams (the row's lock
// orders two replicas' appends to one stream); sessions ended by DELETE
// are rows of dynamic_mcp_ended until their ids expire.

var relaySchema = []string{
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_relay (
		id bigserial PRIMARY KEY,
		payload text NOT NULL,
		at timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_streams (
		stream text PRIMARY KEY,
		seq bigint NOT NULL,
		at timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_events (
		stream text NOT NULL,
		seq bigint NOT NULL,
		msg bytea NOT NULL,
		note boolean NOT NULL,
		at timestamptz NOT NULL DEFAULT clock_timestamp(),
		PRIMARY KEY (stream, seq))`,
	`CREATE TABLE IF NOT EXISTS dynamic_mcp_ended (
		key text PRIMARY KEY,
		until timestamptz NOT NULL)`,
}

const (
	// maxNotify is the largest payload sent in the NOTIFY itself.
	maxNotify = 7900
	// relayRowAge is how long a large payload's row is kept: its
	// listeners read it as soon as they hear of it.
	relayRowAge = time.Minute
	// relayRows bounds the rows of large payloads kept (each up to a
	// message's size, 10 MiB by default), and relayBytes their bytes
	// (the newest is kept whatever its size).
	relayRows  = 256
	relayBytes = 64 << 20
	// streamAge is how long a stream's counter and events outlive the
	// last event: longer than a sealed session id opens (24 hours), so
	// that a live session's numbers never start again.
	streamAge = 25 * time.Hour
)

// Publish notifies channel with payload: "=payload" in the NOTIFY, or,
// when too large, "@id" of its row.
func (s *Store) Publish(ctx context.Context, channel, payload string) error {
	var err error
	if len(payload) < maxNotify {
		_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, "="+payload)
	} else {
		_, err = s.pool.Exec(ctx, `WITH r AS (INSERT INTO dynamic_mcp_relay (payload) VALUES ($2) RETURNING id)
			SELECT pg_notify($1, '@' || id) FROM r`, channel, payload)
		if err == nil {
			s.pruneRelay(ctx) // each time: a row may be megabytes
		}
	}
	if err != nil {
		return fmt.Errorf("store: publish on %s: %w", channel, err)
	}
	return nil
}

// pruneRelay deletes the rows of large payloads that are old, or beyond
// the newest relayRows, or beyond relayBytes of the newest (but the
// newest); best effort.
func (s *Store) pruneRelay(ctx context.Context) {
	_, _ = s.pool.Exec(ctx, `DELETE FROM dynamic_mcp_relay WHERE at < now() - $1::bigint * interval '1 microsecond'
		OR id <= (SELECT max(id) FROM dynamic_mcp_relay) - $2
		OR id IN (SELECT id FROM (SELECT id, sum(octet_length(payload)) OVER (ORDER BY id DESC) AS b, row_number() OVER (ORDER BY id DESC) AS n
			FROM dynamic_mcp_relay) x WHERE b > $3 AND n > 1)`, relayRowAge.Microseconds(), relayRows, cmp.Or(s.relayTotal, relayBytes))
}

// Subscribe listens on channel, as Watch does, and hands fn each payload
// (and "" each time it starts listening, or once notifications were
// dropped: fn may have missed some): one sent inline ("=..."), or read
// from its row ("@id") for one too large for a notification.
func (s *Store) Subscribe(ctx context.Context, channel string, fn func(payload string)) {
	s.listen(ctx, channel, func() { fn("") }, func(conn *pgconn.PgConn, note string) error {
		payload, ok := strings.CutPrefix(note, "=")
		if !ok {
			id, err := strconv.ParseInt(strings.TrimPrefix(note, "@"), 10, 64)
			if err != nil {
				return nil // not ours
			}
			res, err := execParams(ctx, conn, `SELECT payload FROM dynamic_mcp_relay WHERE id = $1`, []any{id})
			err = row{res, err}.Scan(&payload)
			if errors.Is(err, errNoRows) {
				return nil // pruned already: lost, as a notice during a reconnection is
			}
			if err != nil {
				return err
			}
		}
		fn(payload)
		return nil
	})
}

// appendSQL numbers one event under its stream's counter row and keeps it
// when $4 (not over MaxEventBytes).
const appendSQL = `WITH s AS (INSERT INTO dynamic_mcp_streams AS t (stream, seq) VALUES ($1, 1)
		ON CONFLICT (stream) DO UPDATE SET seq = t.seq + 1, at = now() RETURNING seq),
	e AS (INSERT INTO dynamic_mcp_events (stream, seq, msg, note) SELECT $1, seq, $2, $3 FROM s WHERE $4 RETURNING 1)
	SELECT seq FROM s`

// trimSQL forgets a stream's oldest events beyond MaxEvents or
// MaxEventBytes.
const trimSQL = `DELETE FROM dynamic_mcp_events WHERE stream = $1 AND seq <= (
	SELECT coalesce(max(seq), 0) FROM (
		SELECT seq, row_number() OVER w AS n, sum(length(msg)) OVER w AS b
		FROM dynamic_mcp_events WHERE stream = $1 WINDOW w AS (ORDER BY seq DESC)) x
	WHERE n > $2 OR b > $3)`

// pruneEventsEvery is how many events a replica appends between two
// prunes of all streams (MaxEventsTotal, streamAge, ended sessions).
const pruneEventsEvery = 256

// AppendEvents appends events in one transaction of one round trip.
func (s *Store) AppendEvents(ctx context.Context, channel string, events []shared.NewEvent) ([]uint64, error) {
	if len(events) == 0 {
		return nil, nil
	}
	b := &batch{}
	// The events are a cache of what was sent, not a record: a commit that
	// does not wait for the disk (a crash of the database may lose the
	// last ones, never order them wrongly) makes an append about as fast
	// as a NOTIFY.
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	for _, e := range events {
		b.Queue(appendSQL, e.Stream, e.Msg, e.Note, len(e.Msg) <= shared.MaxEventBytes)
	}
	trimmed, noticed := map[string]bool{}, map[string]bool{}
	for _, e := range events {
		if !trimmed[e.Stream] {
			trimmed[e.Stream] = true
			b.Queue(trimSQL, e.Stream, shared.MaxEvents, shared.MaxEventBytes)
		}
	}
	for _, e := range events {
		if e.Notice != "" && !noticed[e.Notice] {
			noticed[e.Notice] = true
			b.Queue(`SELECT pg_notify($1, '=' || $2 || ' ' || (SELECT seq FROM dynamic_mcp_streams WHERE stream = $3))`, channel, e.Notice, e.Stream)
		}
	}
	// One round trip: a batch runs in one implicit transaction, and its
	// notices go out when it commits.
	seqs := make([]uint64, len(events))
	res, err := s.pool.SendBatch(ctx, b)
	for i := range events {
		if err != nil {
			break
		}
		var n int64
		err = row{res[1+i], nil}.Scan(&n)
		seqs[i] = uint64(n)
	}
	if err != nil {
		return nil, fmt.Errorf("store: append events: %w", err)
	}
	if n := s.appended.Add(int64(len(events))); n/pruneEventsEvery != (n-int64(len(events)))/pruneEventsEvery {
		s.pruneEvents(ctx)
	}
	return seqs, nil
}

// pruneEvents forgets the oldest events of all streams beyond
// MaxEventsTotal, the streams untouched for streamAge and the ended
// sessions whose ids have expired; best effort.
func (s *Store) pruneEvents(ctx context.Context) {
	b := &batch{}
	b.Queue(`DELETE FROM dynamic_mcp_events WHERE (stream, seq) IN (
		SELECT stream, seq FROM (SELECT stream, seq, sum(length(msg)) OVER (ORDER BY at DESC, seq DESC) AS b FROM dynamic_mcp_events) x
		WHERE b > $1)`, cmp.Or(s.eventsTotal, shared.MaxEventsTotal))
	b.Queue(`DELETE FROM dynamic_mcp_events WHERE at < now() - $1::bigint * interval '1 microsecond'`, streamAge.Microseconds())
	b.Queue(`DELETE FROM dynamic_mcp_streams WHERE at < now() - $1::bigint * interval '1 microsecond'`, streamAge.Microseconds())
	b.Queue(`DELETE FROM dynamic_mcp_ended WHERE until < now()`)
	_, _ = s.pool.SendBatch(ctx, b)
}

// Events reads stream's kept events after seq, and its counter.
func (s *Store) Events(ctx context.Context, stream string, after uint64) ([]shared.Event, uint64, error) {
	b := &batch{}
	b.Queue(`SELECT coalesce((SELECT seq FROM dynamic_mcp_streams WHERE stream = $1), 0)`, stream)
	b.Queue(`SELECT seq, msg, note FROM dynamic_mcp_events WHERE stream = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		stream, int64(min(after, 1<<62)), shared.MaxEvents)
	res, err := s.pool.SendBatch(ctx, b)
	if err != nil {
		return nil, 0, fmt.Errorf("store: events of a stream: %w", err)
	}
	var last int64
	if err := (row{res[0], nil}).Scan(&last); err != nil {
		return nil, 0, fmt.Errorf("store: events of a stream: %w", err)
	}
	evs := &rows{res: res[1], i: -1}
	var out []shared.Event
	for evs.Next() {
		var e shared.Event
		var seq int64
		if err := evs.Scan(&seq, &e.Msg, &e.Note); err != nil {
			evs.Close()
			return nil, 0, fmt.Errorf("store: events of a stream: %w", err)
		}
		e.Seq = uint64(seq)
		out = append(out, e)
	}
	evs.Close()
	if err := evs.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: events of a stream: %w", err)
	}
	return out, uint64(last), nil
}

// End records key as ended until until and forgets its events.
func (s *Store) End(ctx context.Context, key string, until time.Time) error {
	b := &batch{}
	b.Queue(`INSERT INTO dynamic_mcp_ended (key, until) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET until = greatest(dynamic_mcp_ended.until, excluded.until)`, key, until)
	b.Queue(`DELETE FROM dynamic_mcp_events WHERE stream = $1`, key)
	b.Queue(`DELETE FROM dynamic_mcp_ended WHERE until < now()`) // the table stays as small as the ids that open
	if _, err := s.pool.SendBatch(ctx, b); err != nil {
		return fmt.Errorf("store: end a session: %w", err)
	}
	return nil
}

// Ended reports whether key was ended and its time is not over.
func (s *Store) Ended(ctx context.Context, key string) (bool, error) {
	var ended bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dynamic_mcp_ended WHERE key = $1 AND until > now())`, key).Scan(&ended)
	if err != nil {
		return false, fmt.Errorf("store: is a session ended: %w", err)
	}
	return ended, nil
}
