package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// pinNS is the namespace of pins in a shared store: one value per
// server, the JSON of its pin file.
const pinNS = "pin"

// PinDB is the store every replica shares as the pins use it: values,
// the lock of a server's pins held while they are read and written, and
// a notice to the replicas of a pin accepted.
type PinDB interface {
	shared.Tx
	shared.Holder
	shared.Notifier
}

// UseSharedStore keeps pins in db, the store every replica shares, in
// place of the pins directory. Call it before the pins are used.
func (p *Pins) UseSharedStore(db PinDB) { p.shared = db }

// read returns the JSON of serverID's pins: its file, or its value in the
// shared store; fs.ErrNotExist when there is none.
func (p *Pins) read(serverID string) ([]byte, error) {
	if p.shared == nil {
		return os.ReadFile(p.path(serverID))
	}
	ctx, cancel := context.WithTimeout(context.Background(), pinLockWait)
	defer cancel()
	b, err := p.shared.Get(ctx, pinNS, serverID)
	if errors.Is(err, shared.ErrNotFound) {
		return nil, fs.ErrNotExist
	}
	return b, err
}

// sharedSave writes f to the shared store; the caller holds its lock.
func (p *Pins) sharedSave(f *pinFile) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pinLockWait)
	defer cancel()
	return p.shared.Put(ctx, pinNS, f.Server, b)
}

// where names serverID's pins in a message: its file, or the shared
// store's value.
func (p *Pins) where(serverID string) string {
	if p.shared == nil {
		return p.path(serverID)
	}
	return "the store's pins of " + serverID
}

// pinsChannel is the shared store's notification of a pin accepted (or
// changed) by another replica or `pin accept`.
const pinsChannel = "dynamic_mcp_pins"

// WatchSharedPins re-checks every server's tools against the pins each
// time another replica or `pin accept` changes them on the shared store,
// until ctx ends: what the state dir's file watch does on one machine.
// Without a shared store it returns at once.
func (m *Manager) WatchSharedPins(ctx context.Context) {
	if m.shared == nil {
		return
	}
	m.shared.Watch(ctx, pinsChannel, m.RecheckPins)
}

// notifyAccepted tells the replicas that serverID's pins were accepted.
func (p *Pins) notifyAccepted() error {
	ctx, cancel := context.WithTimeout(context.Background(), pinLockWait)
	defer cancel()
	return p.shared.Notify(ctx, pinsChannel)
}
