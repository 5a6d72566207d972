package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// The tools a server listed the last time it ran are kept, so that a
// flat tools/list asked while the server starts again is answered at once
// from them rather than after the server is ready (a client such as
// Codex lists tools once, for its first turn, waiting a second at most
// at its default mcp_optional_startup_grace_ms, and never again). They are checked against the pins before they are served
// (see Server.LastTools), and replaced by the live list once the server
// is ready; the hub tells the clients that saw them when that differs.

// toolCacheNS is the namespace of the cached tool lists in a shared store:
// one value per server identity, the bytes of its file.
const toolCacheNS = "tools"

// maxCachedTools bounds the bytes of tool definitions kept per server:
// the tools past it, in the server's order, are left out (a flat list
// shows them once the server is ready). A variable for the tests.
var maxCachedTools = 2 << 20

// toolCacheWait bounds a read or write of the shared store's copy.
const toolCacheWait = 5 * time.Second

// toolCache keeps each server's last tools/list: a file per server
// identity in dir, written atomically with mode 0600, or a value in the
// store every replica shares (see Options.Store), as the pins are kept. It is a cache: a lost or torn write costs one cold start,
// so several processes writing it need no lock (a file is replaced whole).
type toolCache struct {
	dir    string
	shared shared.Tx // nil: the files in dir
}

// cacheKey names sc's cached tools: a hash of what starts or reaches the
// server, so that a config that changes its command, args, environment,
// working directory, URL or headers never serves the list of the server
// it ran before.
func cacheKey(sc *config.Server) string {
	b, _ := json.Marshal(struct {
		ID, Transport, Command string
		Args                   []string
		Env                    map[string]string
		Cwd, URL               string
		Headers                map[string]string
	}{sc.ID(), string(sc.Transport), sc.Command, sc.Args, sc.Env, sc.Cwd, sc.URL, sc.Headers})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func (c *toolCache) path(key string) string { return filepath.Join(c.dir, key+".json") }

// encodeTools is the cache's record of serverID's tools, the first of them
// within maxCachedTools bytes, each definition kept byte for byte as the
// server sent it (json.Marshal would compact and escape it, and a
// definition read back must be the one the live list has, or every start
// would look like a change).
func encodeTools(serverID string, tools []Item) []byte {
	name, _ := json.Marshal(serverID)
	var b bytes.Buffer
	b.WriteString(`{"server":`)
	b.Write(name)
	b.WriteString(`,"tools":[`)
	size := 0
	for i, t := range tools {
		if size += len(t.Raw); size > maxCachedTools {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(t.Raw)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// decodeTools reads a record of encodeTools, clipped to maxCachedTools
// again (the file is another process's, and may be older than this one).
func decodeTools(b []byte) ([]Item, error) {
	var rec struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(rec.Tools))
	size := 0
	for _, raw := range rec.Tools {
		if size += len(raw); size > maxCachedTools {
			break
		}
		k, name, err := keyOf(raw, "name")
		if err != nil {
			return nil, err
		}
		items = append(items, Item{Key: k, Name: name, Raw: raw, InputSchema: jsonrpc.Field(raw, "inputSchema")})
	}
	return items, nil
}

// load reads sc's cached tools. found is false when there are none (a
// server never seen with this identity); sum is a hash of the record, to
// tell a save that would write the same bytes.
func (c *toolCache) load(sc *config.Server) (tools []Item, sum [32]byte, found bool, err error) {
	b, err := c.read(cacheKey(sc))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, sum, false, nil
	}
	if err == nil {
		tools, err = decodeTools(b)
	}
	if err != nil {
		return nil, sum, false, fmt.Errorf("tools cached of %s: %w", sc.ID(), err)
	}
	return tools, sha256.Sum256(b), true, nil
}

// read returns the record under key, at most twice maxCachedTools bytes
// of it (room for the record's own syntax); a larger one is refused.
func (c *toolCache) read(key string) ([]byte, error) {
	limit := int64(2 * maxCachedTools)
	if c.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), toolCacheWait)
		defer cancel()
		b, err := c.shared.Get(ctx, toolCacheNS, key)
		if errors.Is(err, shared.ErrNotFound) {
			return nil, fs.ErrNotExist
		}
		if err == nil && int64(len(b)) > limit {
			return nil, fmt.Errorf("over %d bytes", limit)
		}
		return b, err
	}
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes", c.path(key), limit)
	}
	return b, err
}

// save stores tools as sc's, unless the record would be the one whose
// hash is prev; it returns the hash of what is stored.
func (c *toolCache) save(sc *config.Server, tools []Item, prev [32]byte) ([32]byte, error) {
	b := encodeTools(sc.ID(), tools)
	sum := sha256.Sum256(b)
	if sum == prev {
		return sum, nil
	}
	key := cacheKey(sc)
	if c.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), toolCacheWait)
		defer cancel()
		return sum, c.shared.Put(ctx, toolCacheNS, key, b)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return prev, err
	}
	if err := atomicfile.Write(c.path(key), b, 0o600); err != nil {
		return prev, err
	}
	return sum, nil
}

// LastTools are the tools s listed the last time it ran, less those the
// pins withhold, while s is starting: what a flat tools/list shows of it
// before it is ready. ok is false when s is not starting, or when none
// are known: a server never seen with its present config, or one whose
// cache is still being read.
func (s *Server) LastTools() (tools []Item, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.State != StateStarting || !s.lastKnown {
		return nil, false
	}
	return s.last, true
}

// loadLast reads the tools of s's last run and, while s is still
// starting, offers them (LastTools), then tells the hub. Till then a
// flat view counts s's tools unknown: a flat client's handshake waits for
// them. It runs beside the first connection, so that a slow disk or store
// never delays it.
func (s *Server) loadLast() {
	if s.mgr.lists == nil {
		return
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	tools, found := s.readLast()
	s.mu.Lock()
	if found && s.status.State == StateStarting && !s.closing {
		s.last, s.lastKnown = tools, true
	} else {
		found = false
	}
	s.mu.Unlock()
	if found {
		s.logger.Debug("listing the tools of the last run while the server starts", "tools", len(tools))
	}
	s.changed()
}

// readLast is the tools of s's last run the pins let through; found is
// false when there are none or they could not be read. Its caller holds
// cacheMu.
func (s *Server) readLast() (tools []Item, found bool) {
	tools, sum, found, err := s.mgr.lists.load(s.Config)
	if err != nil {
		s.logger.Warn("tools of the last run not read; a list waits for the server", "err", err)
		return nil, false
	}
	s.cacheSum = sum
	if !found {
		return nil, false
	}
	tools, err = s.pinnedLast(tools)
	if err != nil {
		s.logger.Warn("tools of the last run not checked against the pins; a list waits for the server", "err", err)
		return nil, false
	}
	return tools, true
}

// pinnedLast is tools less those the pins would withhold if the server
// listed them now: a tool whose definition differs from its pin (unless
// the group says pin_on_change: warn), and one without a pin, which only
// a live list may pin. The pins are read, never written.
func (s *Server) pinnedLast(tools []Item) ([]Item, error) {
	if s.mgr.pins == nil || len(tools) == 0 {
		return tools, nil
	}
	changed, unpinned, err := s.mgr.pins.Verify(s.Config.ID(), tools)
	if err != nil {
		return nil, err
	}
	kept := make([]Item, 0, len(tools))
	for _, t := range tools {
		if slices.Contains(unpinned, t.Key) || slices.Contains(changed, t.Key) && s.onChange != config.PinWarn {
			continue
		}
		kept = append(kept, t)
	}
	return kept, nil
}

// saveLast stores the tools s listed last as those of its last run. Saves
// are one at a time, each of the lists as they are when it begins, so that
// the last one stored is the latest; one that begins as s closes (its
// state is stopped by then) still stores them.
func (s *Server) saveLast() {
	if s.mgr.lists == nil {
		return
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	s.mu.Lock()
	tools, listed := s.raw.Tools, s.rawGen > 0
	s.mu.Unlock()
	if !listed {
		return
	}
	sum, err := s.mgr.lists.save(s.Config, tools, s.cacheSum)
	if err != nil {
		s.logger.Warn("tools not kept for the next start", "err", err)
		return
	}
	s.cacheSum = sum
}
