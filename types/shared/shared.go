// Package shared names the state several replicas of the hub share
// (`store: postgres://...`): small values by namespace and key, and a lock
// per key that every replica honours, for changes that must happen once
// (a sign-in's renewal). The embedded default, the state directory, does
// not go through it: its files and file locks are in the packages that
// keep them (auth, upstream).
package shared

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound says there is no value under a key.
var ErrNotFound = errors.New("not found")

// Tx reads and writes values; inside Store.Locked, in one transaction.
type Tx interface {
	// Get returns the value of ns/key, or ErrNotFound.
	Get(ctx context.Context, ns, key string) ([]byte, error)
	// Put sets the value of ns/key.
	Put(ctx context.Context, ns, key string, value []byte) error
	// Delete removes ns/key; removing none is not an error.
	Delete(ctx context.Context, ns, key string) error
	// All are ns's keys and values, by key.
	All(ctx context.Context, ns string) (map[string][]byte, error)
}

// Lister lists a namespace's keys.
type Lister interface {
	// Keys are ns's keys, sorted.
	Keys(ctx context.Context, ns string) ([]string, error)
}

// Locker changes values under the lock of ns/key, which every replica
// honours.
type Locker interface {
	// Locked runs fn holding the lock of ns/key, which every replica's
	// Locked of the same ns/key waits for: what fn reads and writes
	// through tx is one transaction, committed (when fn returns nil)
	// before the lock is let go, and rolled back when fn fails. The wait
	// for the lock is bounded by wait.
	Locked(ctx context.Context, ns, key string, wait time.Duration, fn func(tx Tx) error) error
}

// Holder holds the lock of ns/key while values are changed one by one.
type Holder interface {
	// Lock takes the lock of ns/key (the lock Locked takes) and holds it
	// until unlock, for a change made through the store's own Get and Put,
	// which are committed as they are made: before unlock. The wait is
	// bounded by wait.
	Lock(ctx context.Context, ns, key string, wait time.Duration) (unlock func(), err error)
}

// Notifier tells every replica that something changed, and hears it.
type Notifier interface {
	// Notify tells every replica's Watch of channel that something
	// changed.
	Notify(ctx context.Context, channel string) error
	// Watch calls fn each time a replica notifies channel, and once each
	// time it starts listening, the first time and after each
	// reconnection (a notice before it was not heard), until ctx ends;
	// then it returns. It holds one connection while it runs.
	Watch(ctx context.Context, channel string, fn func())
}

// Limiter counts calls against a rate every replica shares.
type Limiter interface {
	// Take takes a token from the bucket key, which holds up to calls
	// tokens, refilled continuously at calls per period (a rate limit
	// every replica counts against), in one atomic step: ok is false when
	// the bucket is empty, and tokens is what it holds then (below 1). A
	// bucket whose calls or period changed starts full.
	Take(ctx context.Context, key string, calls int, period time.Duration) (tokens float64, ok bool, err error)
}

// Store is state shared by every replica: what cmd opens (store:
// postgres://...) and closes. Each part that keeps state there is handed
// it by cmd, as the interface of the roles above it uses.
type Store interface {
	Tx
	Lister
	Locker
	Holder
	Notifier
	Limiter
	// Relay carries an HTTP session between replicas (server/relay).
	Relay
	// Close lets go of the store's connections.
	Close()
}
