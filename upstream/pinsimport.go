package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Import copies from's pins (a state directory's pins directory) into p,
// a shared store's, a server at a time under the store's lock of its pins:
// a server the store has no pins of is copied, the same pins left, older
// ones (whose last first-seen or change is earlier) updated, newer ones
// kept unless force. With dryRun nothing is written. The replicas are
// told, so that they check their tools against the pins imported.
func (p *Pins) Import(from *Pins, force, dryRun bool) (map[string]shared.Outcome, error) {
	if p.shared == nil || from.shared != nil {
		return nil, errors.New("pins: import is from a pins directory into a shared store")
	}
	entries, err := os.ReadDir(from.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]shared.Outcome{}
	wrote := false
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		server, err := url.PathUnescape(name)
		if err != nil {
			continue
		}
		src, err := from.load(server)
		if err != nil {
			return out, err
		}
		o, err := p.importOne(src, force, dryRun)
		if err != nil {
			return out, err
		}
		out[server] = o
		wrote = wrote || (o.Writes() && !dryRun)
	}
	if wrote {
		if err := p.notifyAccepted(); err != nil {
			return out, fmt.Errorf("pins imported, but the replicas were not told (they see them at their next check): %w", err)
		}
	}
	return out, nil
}

// importOne copies src into the store, under its server's lock.
func (p *Pins) importOne(src *pinFile, force, dryRun bool) (shared.Outcome, error) {
	unlock, err := p.lock(src.Server, true)
	if err != nil {
		return "", err
	}
	defer unlock()
	cur, err := p.load(src.Server)
	if err != nil {
		return "", err
	}
	exists := len(cur.Tools) > 0
	a, _ := json.Marshal(cur.Tools) // maps marshal in key order
	b, _ := json.Marshal(src.Tools)
	o := shared.Decide(exists, bytes.Equal(a, b), latest(cur).After(latest(src)), force)
	if o.Writes() && !dryRun {
		if err := p.sharedSave(src); err != nil {
			return "", err
		}
	}
	return o, nil
}

// latest is the last time f's pins changed: a tool first seen, or seen
// changed.
func latest(f *pinFile) time.Time {
	var t time.Time
	for _, pn := range f.Tools {
		if pn.FirstSeen.After(t) {
			t = pn.FirstSeen
		}
		if pn.ChangedAt != nil && pn.ChangedAt.After(t) {
			t = *pn.ChangedAt
		}
	}
	return t
}
