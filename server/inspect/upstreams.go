package inspect

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// samplePeriod is how often the upstreams' states are looked at, to know
// since when each is in its state (its uptime, when ready).
const samplePeriod = time.Second

// upstreamTracker watches the manager's servers for changes of state, to
// tell since when each is in it: a server's status says what it is, not
// since when.
type upstreamTracker struct {
	mgr *upstream.Manager

	mu   sync.Mutex // guards seen
	seen map[*upstream.Server]*seenState

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// seenState is a server's state when last looked at, and since when.
type seenState struct {
	state    upstream.State
	restarts uint64
	since    time.Time
}

func newUpstreamTracker(mgr *upstream.Manager) *upstreamTracker {
	t := &upstreamTracker{mgr: mgr, seen: map[*upstream.Server]*seenState{}, stop: make(chan struct{})}
	if mgr == nil {
		return t
	}
	t.sample()
	t.wg.Go(func() {
		tick := time.NewTicker(samplePeriod)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.sample()
			}
		}
	})
	return t
}

func (t *upstreamTracker) close() {
	t.once.Do(func() { close(t.stop) })
	t.wg.Wait()
}

// sample notes each server's state; one that changed state since it was
// last seen, or is ready after a restart, is in its state since now (a
// server failing to restart stays down since it first failed). Servers a
// reload removed are forgotten.
func (t *upstreamTracker) sample() {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	live := map[*upstream.Server]bool{}
	for _, s := range t.mgr.Servers() {
		live[s] = true
		status, restarts := s.Status(), s.Restarts()
		st := status.State
		switch seen := t.seen[s]; {
		case seen == nil || seen.state != st || st == upstream.StateReady && seen.restarts != restarts:
			// The server's own time, where it says: an inspector started
			// after the server (the shared hub's, at a client's --ui)
			// would otherwise count its uptime from its own start.
			since := now
			if !status.Since.IsZero() {
				since = status.Since
			}
			t.seen[s] = &seenState{state: st, restarts: restarts, since: since}
		default:
			seen.restarts = restarts
		}
	}
	for s := range t.seen {
		if !live[s] {
			delete(t.seen, s)
		}
	}
}

func (t *upstreamTracker) since(s *upstream.Server) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if seen := t.seen[s]; seen != nil {
		return seen.since
	}
	return time.Time{}
}

// upstreamsView is what the Upstreams pane shows.
type upstreamsView struct {
	// Modes are the bytes of tools/list in each mode: what the client's
	// context pays for the tool list.
	Modes  []modeCost  `json:"modes"`
	Groups []groupView `json:"groups"`
}

type modeCost struct {
	Mode  string `json:"mode"`
	Bytes int    `json:"bytes"`
}

type groupView struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Servers     []serverView `json:"servers"`
}

type serverView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Transport string     `json:"transport,omitempty"`
	State     string     `json:"state"`
	Since     *time.Time `json:"since,omitempty"` // in this state since, about (see samplePeriod)
	Restarts  uint64     `json:"restarts"`

	Protocol      string `json:"protocol,omitempty"`
	ServerName    string `json:"server_name,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`

	Tools      int `json:"tools"`        // the tools the client gets: the group's deny/allow lists applied
	Hidden     int `json:"hidden_tools"` // the tools those lists hide
	Prompts    int `json:"prompts"`
	Resources  int `json:"resources"`
	Templates  int `json:"templates"`
	ToolsBytes int `json:"tools_bytes"` // of the server's tool definitions

	Error      string   `json:"error,omitempty"`  // why it is down: the first line
	Stderr     []string `json:"stderr,omitempty"` // the last lines of a child that exited
	PinChanged []string `json:"pin_changed,omitempty"`
}

func (i *Inspector) upstreams() upstreamsView {
	v := upstreamsView{Modes: []modeCost{}, Groups: []groupView{}}
	if f := i.opts.ToolsList; f != nil {
		for _, m := range []config.Mode{config.ModeDynamic, config.ModeFlat} {
			v.Modes = append(v.Modes, modeCost{Mode: string(m), Bytes: len(f(m))})
		}
	}
	mgr := i.opts.Upstreams
	if mgr == nil {
		return v
	}
	i.up.sample()
	for _, g := range mgr.Groups() {
		gv := groupView{Name: g.Config.Name, Description: g.Config.Description, Servers: []serverView{}}
		for _, s := range g.Servers {
			gv.Servers = append(gv.Servers, i.server(g.Config, s))
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

func (i *Inspector) server(g *config.Group, s *upstream.Server) serverView {
	st := s.Status()
	sv := serverView{ID: s.Config.ID(), Name: s.Config.Name, Transport: string(s.Config.Transport), State: st.State.String(),
		Restarts: s.Restarts(), Protocol: st.ProtocolVersion, ServerName: st.ServerInfo.Name, ServerVersion: st.ServerInfo.Version,
		PinChanged: st.PinChanged}
	if since := i.up.since(s); !since.IsZero() {
		sv.Since = &since
	}
	lists := s.Lists()
	sv.Prompts, sv.Resources, sv.Templates = len(lists.Prompts), len(lists.Resources), len(lists.Templates)
	for _, t := range lists.Tools {
		if policy.Hidden(g, policy.MethodToolsCall, t.Key) {
			sv.Hidden++ // counted apart: a user checking a deny-list sees it hold
			continue
		}
		sv.Tools++
		sv.ToolsBytes += len(t.Raw)
	}
	if st.Err != nil {
		// What a server says as it fails can hold a URL with its
		// credentials, or a variable: redacted as messages are.
		first, _, _ := strings.Cut(st.Err.Error(), "\n")
		sv.Error = redact.Text(first)
		var exit *transport.ExitError
		if errors.As(st.Err, &exit) {
			for _, line := range exit.Stderr {
				sv.Stderr = append(sv.Stderr, redact.Text(line))
			}
		}
	}
	return sv
}
