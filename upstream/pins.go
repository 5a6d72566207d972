package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
)

// pinLockWait bounds how long a change of a pin file waits for another
// process's, which reads and writes one small file.
const pinLockWait = 10 * time.Second

// ErrPinFile says a server's pin file exists but cannot be read or parsed.
// Check then fails closed: it reports every tool as changed, so the
// server's tools are withheld (under pin_on_change: block) until the file
// is repaired or removed.
var ErrPinFile = errors.New("pin file cannot be used")

// ErrPinsNotSaved says the pins of tools seen for the first time could not
// be written (a full disk). Check then fails closed for those tools: they
// are reported as changed, so withheld (under pin_on_change: block), until
// their pins are on disk: a tool is never served unpinned, so no later
// start takes as first seen a definition an earlier one served.
var ErrPinsNotSaved = errors.New("tool pins not saved")

// Pins records, per server, a hash of every tool's definition the first
// time it is seen, so that a server that later changes a tool (a "rug
// pull") is noticed. One JSON file per server in the pins directory,
// written atomically with mode 0600. Other processes share the directory
// (the hubs of other clients with the same config, `pin accept`): each
// read-modify-write of a file is made under a file lock of its server's,
// and reads the file afresh, so no process's pins overwrite another's.
//
// Reading and writing a pin file is file I/O (a write syncs to disk): a
// Server calls Check with none of its locks held, so that a slow disk
// never holds up its calls or lists (see Server.lockWithPins).
type Pins struct {
	dir string
	// write stores a server's pins; atomicfile.WriteJSON, or what a test
	// puts in its place.
	write func(path string, v any) error
	// shared keeps the pins in the store every replica shares in place
	// of dir's files (see UseSharedStore); nil: the files.
	shared PinDB

	mu    sync.Mutex               // guards files
	files map[string]chan struct{} // by server: a lock (one token) on the read-modify-write of its file
}

// NewPins keeps pins in dir.
func NewPins(dir string) *Pins {
	return &Pins{dir: dir, write: func(path string, v any) error { return atomicfile.WriteJSON(path, v, 0o600) }}
}

// lock takes the lock of serverID's file: two changes of one file never
// interleave, so two writes of it never land out of order, while the
// files of other servers are read and written meanwhile. Within the
// process a token per file; across processes, for a change (write), a
// file lock, taken second, so that a process waits on the disk once per
// file at a time. A read alone needs no file lock: a pin file is replaced
// whole (atomicfile), so a reader sees one version or the next.
func (p *Pins) lock(serverID string, write bool) (func(), error) {
	p.mu.Lock()
	token := p.files[serverID]
	if token == nil {
		if p.files == nil {
			p.files = map[string]chan struct{}{}
		}
		token = make(chan struct{}, 1)
		p.files[serverID] = token
	}
	p.mu.Unlock()
	token <- struct{}{}
	if !write {
		return func() { <-token }, nil
	}
	if p.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pinLockWait)
		unlock, err := p.shared.Lock(ctx, pinNS, serverID, pinLockWait)
		cancel() // bounds the wait; the lock's transaction outlives it
		if err != nil {
			<-token
			return nil, err
		}
		return func() {
			unlock()
			<-token
		}, nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		<-token
		return nil, err
	}
	fl, err := filelock.Acquire(context.Background(), filepath.Join(p.dir, "."+url.PathEscape(serverID)+".lock"), pinLockWait)
	if err != nil {
		<-token
		return nil, err
	}
	return func() {
		fl.Unlock()
		<-token
	}, nil
}

// Dir is where the pin files are.
func (p *Pins) Dir() string { return p.dir }

type pinFile struct {
	Server string          `json:"server"`
	Tools  map[string]*pin `json:"tools"`
}

type pin struct {
	Hash      string     `json:"hash"`
	FirstSeen time.Time  `json:"first_seen"`
	Changed   string     `json:"changed,omitempty"` // hash of the definition now served, when it differs
	ChangedAt *time.Time `json:"changed_at,omitempty"`
}

// hashTool hashes what a tool does and says: name, title, description,
// input and output schema, annotations; canonically, so key order and
// spacing do not count.
func hashTool(raw json.RawMessage) string {
	var t struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
	}
	_ = json.Unmarshal(raw, &t)
	canon := func(b json.RawMessage) any {
		var v any
		_ = json.Unmarshal(b, &v)
		return v
	}
	b, _ := json.Marshal([]any{t.Name, t.Title, t.Description, canon(t.InputSchema), canon(t.OutputSchema), canon(t.Annotations)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (p *Pins) path(serverID string) string {
	return filepath.Join(p.dir, url.PathEscape(serverID)+".json")
}

func (p *Pins) load(serverID string) (*pinFile, error) {
	f := &pinFile{Server: serverID, Tools: map[string]*pin{}}
	b, err := p.read(serverID)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err == nil {
		err = json.Unmarshal(b, f)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v; repair it, or remove it to pin the tools %s serves now", ErrPinFile, p.where(serverID), err, serverID)
	}
	if f.Tools == nil {
		f.Tools = map[string]*pin{}
	}
	return f, nil
}

func (p *Pins) save(f *pinFile) error {
	if p.shared != nil {
		return p.sharedSave(f)
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	return p.write(p.path(f.Server), f)
}

// Check compares tools with their pins: a tool seen for the first time is
// pinned; it returns the names of tools whose definition differs from
// their pin, in order, with those seen for the first time when their pins
// cannot be saved (and an error wrapping ErrPinsNotSaved). When the pin
// file cannot be read or parsed it fails closed: every tool is returned
// as changed, with an error wrapping ErrPinFile that says what to do.
func (p *Pins) Check(serverID string, tools []Item) ([]string, error) {
	unlock, err := p.lock(serverID, true)
	if err != nil {
		err = fmt.Errorf("%w: %s: %v", ErrPinFile, p.where(serverID), err)
	} else {
		defer unlock()
	}
	var f *pinFile
	if err == nil {
		f, err = p.load(serverID)
	}
	if err != nil {
		all := make([]string, 0, len(tools))
		for _, t := range tools {
			all = append(all, t.Key)
		}
		return all, err
	}
	dirty := false
	var changed, fresh []string // fresh: seen for the first time
	now := time.Now().UTC()
	for _, t := range tools {
		h := hashTool(t.Raw)
		pn, ok := f.Tools[t.Key]
		switch {
		case !ok:
			f.Tools[t.Key] = &pin{Hash: h, FirstSeen: now}
			fresh = append(fresh, t.Key)
			dirty = true
		case pn.Hash == h:
			if pn.Changed != "" { // changed back
				pn.Changed, pn.ChangedAt = "", nil
				dirty = true
			}
		default:
			changed = append(changed, t.Key)
			if pn.Changed != h {
				pn.Changed, pn.ChangedAt = h, &now
				dirty = true
			}
		}
	}
	if dirty {
		if err := p.save(f); err != nil {
			if len(fresh) == 0 {
				return changed, err
			}
			var withheld []string
			for _, t := range tools {
				if slices.Contains(changed, t.Key) || slices.Contains(fresh, t.Key) {
					withheld = append(withheld, t.Key)
				}
			}
			return withheld, fmt.Errorf("%w: %s: %v; %d tools seen for the first time are withheld until their pins can be saved",
				ErrPinsNotSaved, p.where(serverID), err, len(fresh))
		}
	}
	return changed, nil
}

// Verify compares tools with their pins without changing them: changed
// are the tools whose definition differs from their pin, unpinned those
// that have none. It serves tools listed from a cache (see toolcache.go),
// which must neither pin a tool nor record a change: only a live list does.
func (p *Pins) Verify(serverID string, tools []Item) (changed, unpinned []string, err error) {
	unlock, err := p.lock(serverID, false)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	f, err := p.load(serverID)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range tools {
		switch pn, ok := f.Tools[t.Key]; {
		case !ok:
			unpinned = append(unpinned, t.Key)
		case pn.Hash != hashTool(t.Raw):
			changed = append(changed, t.Key)
		}
	}
	return changed, unpinned, nil
}

// Accept takes the changed definitions of tools (all changed tools of the
// server when none are named) as their new pins, and returns which it
// accepted.
func (p *Pins) Accept(serverID string, tools ...string) ([]string, error) {
	unlock, err := p.lock(serverID, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := p.load(serverID)
	if err != nil {
		return nil, err
	}
	var accepted []string
	for name, pn := range f.Tools {
		if pn.Changed == "" || (len(tools) > 0 && !slices.Contains(tools, name)) {
			continue
		}
		pn.Hash, pn.Changed, pn.ChangedAt = pn.Changed, "", nil
		accepted = append(accepted, name)
	}
	for _, name := range tools {
		if pn, ok := f.Tools[name]; !ok {
			return nil, fmt.Errorf("server %s has no pinned tool %q", serverID, name)
		} else if pn.Changed == "" && !slices.Contains(accepted, name) {
			return nil, fmt.Errorf("tool %q of %s has not changed", name, serverID)
		}
	}
	sort.Strings(accepted)
	if len(accepted) == 0 {
		return nil, nil
	}
	if err := p.save(f); err != nil {
		return nil, err
	}
	if p.shared != nil {
		return accepted, p.notifyAccepted()
	}
	return accepted, nil
}

// PinChange is a pinned tool whose served definition differs from its pin.
type PinChange struct {
	Tool      string
	FirstSeen time.Time
	ChangedAt time.Time
}

// Changes lists serverID's tools whose definition changed since pinned.
func (p *Pins) Changes(serverID string) ([]PinChange, error) {
	unlock, err := p.lock(serverID, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := p.load(serverID)
	if err != nil {
		return nil, err
	}
	var out []PinChange
	for name, pn := range f.Tools {
		if pn.Changed != "" {
			c := PinChange{Tool: name, FirstSeen: pn.FirstSeen}
			if pn.ChangedAt != nil {
				c.ChangedAt = *pn.ChangedAt
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out, nil
}
