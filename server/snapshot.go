package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/apps"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/skills"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// snapshot is everything a request reads that a reload or an upstream's
// change replaces: built together, swapped whole behind one pointer, and
// never modified, so a request that loads it once sees one consistent
// hub from start to end.
type snapshot struct {
	cfg    *config.Config
	policy *policy.Policy
	view   *view
	// profiles are the views of the config's profiles, by name; empty is
	// the view of no group, for a session whose profile a reload removed.
	profiles map[string]*view
	empty    func() *view // built on first use: seldom needed
	audit    *audit.Trail // nil when the trail is off
	// secrets are cfg's (Config.Secrets), for the hops' redaction.
	secrets *redact.Secrets
	// timeouts are how long each server of cfg has to answer a call
	// (CallTimeoutFor), worked out once (callTimeout).
	timeouts map[*config.Server]time.Duration
	chain    call.Handler // the stages a call goes through, linked to their end (chain.go)
	requests call.Handler // the stages every request goes through, linked to handle (chain.go)
	// replaced is closed when a newer snapshot takes this one's place, so
	// that a request waiting for upstreams to start can wait for the next.
	replaced chan struct{}
}

func newSnapshot(cfg *config.Config, pol *policy.Policy, v *view, audit *audit.Trail) *snapshot {
	timeouts := map[*config.Server]time.Duration{}
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			timeouts[s] = cfg.CallTimeoutFor(s)
		}
	}
	return &snapshot{cfg: cfg, policy: pol, view: v, audit: audit, secrets: cfg.Secrets(), timeouts: timeouts, replaced: make(chan struct{})}
}

// callTimeout is how long srv has to answer a call under s's config: a
// server of another config (its upstream moved to a reload's config
// before the hub did) is asked.
func (s *snapshot) callTimeout(srv *config.Server) time.Duration {
	if t, ok := s.timeouts[srv]; ok {
		return t
	}
	return s.cfg.CallTimeoutFor(srv)
}

// withViews is s with its views built from mgr: the whole config's and
// each profile's.
func (s *snapshot) withViews(mgr *upstream.Manager) *snapshot {
	c := s.cfg
	s.view = withCooperative(buildView(clients.BaseMode(c.Mode), c.Settings.Search, c.Settings.MaxTools, mgr, s.policy), c)
	s.profiles = clients.Views(c, func(only []*config.Group, mode config.Mode, pcfg *config.Config) *view {
		return withCooperative(buildViewOf(only, mode, pcfg.Settings.Search, pcfg.Settings.MaxTools, mgr, s.policy), pcfg)
	})
	s.empty = sync.OnceValue(func() *view {
		return buildViewOf([]*config.Group{}, clients.BaseMode(c.Mode), config.SearchOff, 0, mgr, s.policy)
	})
	return s
}

// viewOf is the view of the profile named profile ("" is the whole
// config). A profile a reload removed shows nothing but the meta-tools'
// empty list: its sessions are told by list_changed.
func (s *snapshot) viewOf(profile string) *view {
	if profile == "" {
		return s.view
	}
	if v, ok := s.profiles[profile]; ok {
		return v
	}
	return s.empty()
}

// view is what a client sees (server/view), with what the hub's other
// concerns keep per view beside it.
type view struct {
	*views.View
	shaped *clients.Shaped // ToolsList as clients: rules shape it, built on first use
	// cooperative says the view serves the cooperative tools (cooperative.go).
	cooperative bool
	// apps are the MCP Apps of the view's servers: their ui:// URIs and
	// the tools their views call by their own names (server/apps).
	apps *appTable
	// skills are the Skills extension's skills of the view's servers,
	// namespaced per group, with their routes (server/skills).
	skills *skillTable
}

// skillTable is a view's merged skills (server/skills).
type skillTable = skills.Table[*upstream.Server]

// appTable is a view's MCP Apps (server/apps).
type appTable = apps.Table[route]

// hashes are the hashes of v's lists, by kind (see listen.Notifier).
func (v *view) hashes() listen.Hashes {
	return listen.Hashes{v.ToolsHash, v.PromptsHash, v.ResourcesHash}
}

// route says where a name the client uses goes (server/view).
type route = views.Route

// buildView computes the client's view of mgr in mode (see
// views.View.Build).
func buildView(mode config.Mode, search config.SearchMode, maxTools int, mgr *upstream.Manager, pol *policy.Policy) *view {
	return buildViewOf(nil, mode, search, maxTools, mgr, pol)
}

// buildViewOf is buildView of the groups only (nil: every group), with
// expose lists from them: a profile's view (see config.WithProfile).
func buildViewOf(only []*config.Group, mode config.Mode, search config.SearchMode, maxTools int, mgr *upstream.Manager, pol *policy.Policy) *view {
	v := &view{View: views.New(mode), shaped: &clients.Shaped{}, skills: skills.New[*upstream.Server]()}
	v.apps = apps.New[route](v.HiddenURIs, &v.Problems)
	v.Build(only, search, maxTools, mgr, pol, viewExtension{v})
	return v
}

// viewExtension adds MCP Apps (server/apps) and the Skills extension
// (server/skills) to the view v as it is built.
type viewExtension struct{ v *view }

func (x viewExtension) Lists(g *upstream.Group, s *upstream.Server, lists upstream.Lists) upstream.Lists {
	x.v.apps.Note(s)
	return skills.Add(x.v.skills, g, s, lists, &x.v.Resources, &x.v.Templates)
}

func (x viewExtension) Tool(g *upstream.Group, s *upstream.Server, raw json.RawMessage) json.RawMessage {
	return x.v.apps.Tool(g, s, raw)
}

func (x viewExtension) Resource(g *upstream.Group, s *upstream.Server, r upstream.Item) (json.RawMessage, bool, bool) {
	if !strings.HasPrefix(r.Key, apps.Scheme) {
		return nil, false, false
	}
	raw, ok := x.v.apps.Resource(g, s, r)
	return raw, ok, true
}

// Done routes the apps' tools by their own names and takes in the skills'
// problems; the skills change with the resources their files are: a
// client hears of both by notifications/resources/list_changed, as from
// the server.
func (x viewExtension) Done() []json.RawMessage {
	v := x.v
	v.apps.RouteTools(func(yield func(string, route) bool) {
		for _, g := range v.Groups {
			for name, r := range g.ToolRoutes {
				if !yield(name, r) {
					return
				}
			}
		}
	}, func(r route) *upstream.Server { return r.Server }, func(name string) bool {
		_, listed := v.FlatRoutes[name]
		return listed || name == views.GetToolsName || name == views.CallToolName || name == views.SearchToolName
	})
	v.Problems = append(v.Problems, v.skills.Problems...)
	return v.skills.Entries()
}

// snapshot is the current snapshot. A request that may write the audit
// trail takes it with acquire instead.
func (h *Hub) snapshot() *snapshot { return h.snap.Load() }

// acquire loads the current snapshot for one request and keeps its audit
// trail open until the request calls the snapshot's audit.release, so
// that a reload moving the trail loses none of the request's records. The
// request carries the snapshot to everything it calls (see request).
func (h *Hub) acquire() *snapshot {
	for {
		s := h.snap.Load()
		if s.audit == nil || s.audit.Hold() { // no trail: nothing to hold
			return s
		}
		// The trail was retired between the load and the hold: its
		// successor is in place already (see swap), so loading again
		// finds it.
	}
}

// swap makes next the current snapshot. A trail it no longer uses is
// closed once its last writer is done. Callers hold h.swapMu.
func (h *Hub) swap(next *snapshot) (old *snapshot) {
	next.replaced = make(chan struct{})
	old = h.snap.Swap(next)
	close(old.replaced)
	if old.audit != next.audit {
		old.audit.Retire()
	}
	return old
}

// awaitView waits until the current view of profile satisfies done, ctx
// ends, or wait has passed, and returns the view it stopped at.
func (h *Hub) awaitView(ctx context.Context, profile string, wait time.Duration, done func(*view) bool) *view {
	s := h.snapshot()
	if done(s.viewOf(profile)) || wait <= 0 {
		return s.viewOf(profile)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for !done(s.viewOf(profile)) {
		select {
		case <-s.replaced:
			s = h.snapshot()
		case <-t.C:
			return s.viewOf(profile)
		case <-ctx.Done():
			return s.viewOf(profile)
		}
	}
	return s.viewOf(profile)
}

// HealthComponents are the parts of the hub besides its upstreams that
// /readyz reports (see health.Mount): the audit trail, failing (a write
// error, records that found no room in its queue in time) until a write
// succeeds again; the current snapshot's, whichever that is when asked.
func (h *Hub) HealthComponents() []health.Component {
	return []health.Component{{Name: "audit", Check: func() error { return h.snapshot().audit.Status() }}}
}
