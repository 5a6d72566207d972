package server

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/yosida95/uritemplate/v3"

	"github.com/dynamic-mcp/dynamic-mcp/server/apps"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/skills"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// route says where a name the client uses goes: which server, and the
// name that server knows it by.
type route struct {
	server *upstream.Server
	name   string
	// cached says the tool is known from the server's last run only: the
	// server is still starting (see upstream.Server.LastTools).
	cached bool
	// tool is the tool's definition as its server listed it (nil for a
	// prompt): its inputSchema checks a call's arguments (validateargs.go).
	tool *upstream.Item
}

type templateRoute struct {
	template *uritemplate.Template
	server   *upstream.Server
	hidden   config.Filter // the group's resources filter, for the URIs it matches
}

// groupView is one group as the client sees it.
type groupView struct {
	name, description string
	state             upstream.State // ready if any server is
	reason            string         // why it is not ready
	tools             []json.RawMessage
	toolRoutes        map[string]route // upstream tool name -> server
	// instructions are the ready servers' own (see groupInstructions),
	// "" when the group says instructions: false.
	instructions string
}

// view is everything the client sees, built from the upstreams' cached
// lists whenever they change, then read without locks (it is immutable).
type view struct {
	mode       config.Mode // the mode the view was built for
	groups     []*groupView
	groupIndex map[string]*groupView

	toolsList  json.RawMessage  // the whole tools/list result
	shaped     *shapedLists     // toolsList as clients: rules shape it, built on first use
	flatRoutes map[string]route // flat mode, and a group's expose: in dynamic mode: exposed tool name -> upstream

	// search is the index search_dynamic_tools answers from, nil when the
	// tool is not offered (flat mode, search: off, or auto with few tools).
	search *toolIndex
	// cooperative says the view serves the cooperative tools (cooperative.go).
	cooperative bool

	prompts      []json.RawMessage
	promptRoutes map[string]route

	resources      []json.RawMessage
	resourceRoutes map[string]*upstream.Server

	templates      []json.RawMessage
	templateRoutes []templateRoute

	// apps are the MCP Apps of the view's servers: their ui:// URIs and
	// the tools their views call by their own names (server/apps).
	apps *appTable
	// skills are the Skills extension's skills of the view's servers,
	// namespaced per group, with their routes (skills.go).
	skills *skillTable

	// hiddenURIs and hiddenTemplates are the resources and templates a
	// group's resources filter hides. A URI they cover is answered as one
	// that does not exist by every method (read, subscribe, complete) and
	// its notifications/resources/updated never reach a client, even
	// where another server's template or the subscription fallback would
	// otherwise take it.
	hiddenURIs      map[string]bool
	hiddenTemplates []*uritemplate.Template

	// starting says some enabled server is still starting: its lists are
	// not in the view yet.
	starting bool
	// unknown says some enabled server is still starting and its tools
	// are not known from its last run either (a flat view lists those).
	unknown bool

	// hashes of the whole lists, to tell whether a client's view changed.
	toolsHash, promptsHash, resourcesHash uint64

	// problems found while building, such as name collisions; logged once
	// when they first appear.
	problems []string
	// warnings are what the hub serves anyway but the user should hear
	// about, such as a policy rule naming an argument a tool does not
	// have; logged once when they first appear.
	warnings []string
}

// hashes are the hashes of v's lists, by kind (see listen.Notifier).
func (v *view) hashes() listen.Hashes {
	return listen.Hashes{v.toolsHash, v.promptsHash, v.resourcesHash}
}

// groupStarting reports whether the group name is still starting.
func (v *view) groupStarting(name string) bool {
	g := v.groupIndex[name]
	return g != nil && g.state == upstream.StateStarting
}

// buildView computes the client's view of mgr in mode, checking the tools'
// input schemas against pol's argument rules (pol may be nil). In dynamic
// mode search says whether search_dynamic_tools is offered; its index is
// built by the view's first search, not here on the hub's event loop.
// maxTools, when above zero, caps the tools tools/list shows (see
// config.Settings.MaxTools).
func buildView(mode config.Mode, search config.SearchMode, maxTools int, mgr *upstream.Manager, pol *policy.Policy) *view {
	return buildViewOf(nil, mode, search, maxTools, mgr, pol)
}

// buildViewOf is buildView of the groups only (nil: every group), with
// expose lists from them: a profile's view (see config.WithProfile).
func buildViewOf(only []*config.Group, mode config.Mode, search config.SearchMode, maxTools int, mgr *upstream.Manager, pol *policy.Policy) *view {
	v := &view{
		mode:           mode,
		shaped:         &shapedLists{},
		groupIndex:     map[string]*groupView{},
		flatRoutes:     map[string]route{},
		promptRoutes:   map[string]route{},
		resourceRoutes: map[string]*upstream.Server{},
		hiddenURIs:     map[string]bool{},
	}
	v.apps = apps.New[route](v.hiddenURIs, &v.problems)
	var flatTools, exposed []json.RawMessage
	skillsIn := skills.New[*upstream.Server]()
	owner := map[string]string{} // exposed tool name -> server id, for collision reports
	promptOwner := map[string]string{}
	for _, g := range mgr.Groups() {
		if only != nil {
			pg := profileGroup(only, g.Config.Name)
			if pg == nil {
				continue // hidden from the profile: as if it did not exist
			}
			if pg.Expose != nil {
				cp := *g
				cp.Config = pg
				g = &cp
			}
		}
		gv := &groupView{name: g.Config.Name, description: g.Config.Description, toolRoutes: map[string]route{}}
		gv.state, gv.reason = groupState(g)
		if g.Config.Instructions {
			gv.instructions = groupInstructions(g)
		}
		v.groups = append(v.groups, gv)
		v.groupIndex[gv.name] = gv
		for _, s := range g.Servers {
			lists, cached := v.listsOf(s)
			v.apps.Note(s)
			lists = skills.Add(skillsIn, g, s, lists, &v.resources, &v.templates)
			for i, t := range lists.Tools {
				if policy.Hidden(g.Config, policy.MethodToolsCall, t.Key) {
					continue // hidden: as if the server did not have it
				}
				if pol != nil {
					v.warnings = append(v.warnings, pol.UnknownArgs(g.Config.Name, s.Config.Name, t.Key, jsonrpc.Field(t.Raw, "inputSchema"))...)
				}
				if prev, dup := gv.toolRoutes[t.Key]; dup {
					v.problems = append(v.problems, fmt.Sprintf("tool %q of %s is hidden: %s in the same group has a tool of that name", t.Key, s.Config.ID(), prev.server.Config.ID()))
					continue
				}
				gv.toolRoutes[t.Key] = route{server: s, name: t.Key, cached: cached, tool: &lists.Tools[i]}
				t.Raw = v.apps.Tool(g, s, t.Raw)
				gv.tools = append(gv.tools, t.Raw)
				if mode != config.ModeFlat {
					continue
				}
				name := ExposedName(g.Config.Name, t.Key, g.Config.Prefix)
				if prev, dup := owner[name]; dup {
					v.problems = append(v.problems, fmt.Sprintf("tool %q of %s is hidden: its name collides with a tool of %s (set prefix: true on the group)", name, s.Config.ID(), prev))
					continue
				}
				raw, err := setField(t.Raw, "name", name)
				if err != nil {
					continue
				}
				owner[name] = s.Config.ID()
				v.flatRoutes[name] = gv.toolRoutes[t.Key]
				flatTools = append(flatTools, raw)
			}
			for _, p := range lists.Prompts {
				if policy.Hidden(g.Config, policy.MethodPromptsGet, p.Key) {
					continue
				}
				name := ExposedName(g.Config.Name, p.Key, g.Config.Prefix)
				if prev, dup := promptOwner[name]; dup {
					v.problems = append(v.problems, fmt.Sprintf("prompt %q of %s is hidden: its name collides with a prompt of %s", name, s.Config.ID(), prev))
					continue
				}
				raw, err := setField(p.Raw, "name", name)
				if err != nil {
					continue
				}
				promptOwner[name] = s.Config.ID()
				v.promptRoutes[name] = route{server: s, name: p.Key}
				v.prompts = append(v.prompts, raw)
			}
			for _, r := range lists.Resources {
				if strings.HasPrefix(r.Key, apps.Scheme) {
					if raw, ok := v.apps.Resource(g, s, r); ok {
						v.resources = append(v.resources, raw)
					}
					continue
				}
				if policy.Hidden(g.Config, policy.MethodResourcesRead, r.Key, r.Name) {
					v.hiddenURIs[r.Key] = true
					continue
				}
				if prev, dup := v.resourceRoutes[r.Key]; dup {
					v.problems = append(v.problems, fmt.Sprintf("resource %q of %s is hidden: %s lists the same URI", r.Key, s.Config.ID(), prev.Config.ID()))
					continue
				}
				v.resourceRoutes[r.Key] = s
				v.resources = append(v.resources, r.Raw)
			}
			for _, t := range lists.Templates {
				if policy.Hidden(g.Config, policy.MethodResourcesRead, t.Key, t.Name) {
					if tmpl, err := uritemplate.New(t.Key); err == nil {
						v.hiddenTemplates = append(v.hiddenTemplates, tmpl)
					}
					continue
				}
				tmpl, err := uritemplate.New(t.Key)
				if err != nil {
					v.problems = append(v.problems, fmt.Sprintf("resource template %q of %s is not a valid URI template: %v", t.Key, s.Config.ID(), err))
					continue
				}
				v.templateRoutes = append(v.templateRoutes, templateRoute{template: tmpl, server: s, hidden: g.Config.Resources})
				v.templates = append(v.templates, t.Raw)
			}
		}
		if mode == config.ModeDynamic {
			exposed = append(exposed, v.expose(g, gv, owner)...)
		}
	}
	v.apps.RouteTools(func(yield func(string, route) bool) {
		for _, g := range v.groups {
			for name, r := range g.toolRoutes {
				if !yield(name, r) {
					return
				}
			}
		}
	}, func(r route) *upstream.Server { return r.server }, func(name string) bool {
		_, listed := v.flatRoutes[name]
		return listed || name == getToolsName || name == callToolName || name == searchToolName
	})
	v.skills = skillsIn
	v.problems = append(v.problems, skillsIn.Problems...)
	if mode == config.ModeFlat {
		v.toolsList = listResult("tools", capTools(flatTools, maxTools), "")
	} else {
		v.search = buildToolIndex(v.groups, search)
		v.toolsList = listResult("tools", capTools(append(metaTools(v.groups, v.search != nil), exposed...), maxTools), "")
	}
	v.toolsHash = hashOf(v.toolsList)
	v.promptsHash = hashOf(v.prompts...)
	// Skills change with the resources their files are: a client hears
	// of both by notifications/resources/list_changed, as from the server.
	v.resourcesHash = hashOf(append(append(append([]json.RawMessage{}, v.resources...), append([]json.RawMessage{json.RawMessage("|")}, v.templates...)...),
		append([]json.RawMessage{json.RawMessage("|")}, v.skills.Entries()...)...)...)
	return v
}

// listsOf are the lists of s the view shows, and notes whether s is
// starting. While it starts, a flat view shows the tools of its last run,
// if they are known (cached), so that a client that lists tools once,
// right after it starts the hub, gets them (see upstream.Server.LastTools);
// a dynamic view shows the groups alone until they are ready, as before.
func (v *view) listsOf(s *upstream.Server) (lists upstream.Lists, cached bool) {
	if s.Status().State != upstream.StateStarting || s.Config.Disabled {
		return s.Lists(), false
	}
	v.starting = true
	if v.mode == config.ModeFlat {
		if tools, ok := s.LastTools(); ok {
			return upstream.Lists{Tools: tools}, true
		}
	}
	v.unknown = true
	return upstream.Lists{}, false
}

// capTools is the first max of tools, or all of them when max is not
// above zero.
func capTools(tools []json.RawMessage, max int) []json.RawMessage {
	if max > 0 && len(tools) > max {
		return tools[:max]
	}
	return tools
}

// hashOf is a hash of the byte strings, in order, with their boundaries.
func hashOf(parts ...json.RawMessage) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// groupState is ready if any server of the group is, starting if none is
// ready but one is still starting, and failed otherwise, with the reasons.
func groupState(g *upstream.Group) (upstream.State, string) {
	var reasons []string
	state := upstream.StateFailed
	for _, s := range g.Servers {
		st := s.Status()
		switch st.State {
		case upstream.StateReady:
			return upstream.StateReady, ""
		case upstream.StateStarting:
			state = upstream.StateStarting
		case upstream.StateFailed:
			reasons = append(reasons, shortReason(st.Err))
		case upstream.StateDisabled:
			reasons = append(reasons, "disabled")
		}
	}
	if state == upstream.StateStarting {
		return state, "starting"
	}
	return state, strings.Join(reasons, "; ")
}

// shortReason is the first line of err, cut to a length that suits a tool
// description.
func shortReason(err error) string {
	if err == nil {
		return "unavailable"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// resolveResource finds the server that owns uri: the one that listed it,
// or else the first whose template matches it, in config order. A URI a
// group hides has no owner, unless another group lists it visibly.
func (v *view) resolveResource(uri string) *upstream.Server {
	if s, ok := v.resourceRoutes[uri]; ok {
		return s
	}
	if v.hidesResource(uri) {
		return nil
	}
	for _, t := range v.templateRoutes {
		if t.template.Match(uri) != nil {
			if t.hidden.Hides(uri) { // policy.Hidden's reading for a URI alone
				return nil
			}
			return t.server
		}
	}
	return nil
}

// hidesResource reports whether uri is one a group's resources filter
// hides: a resource listed under that URI, or a URI of a hidden template.
// A URI that some group lists visibly is not hidden.
func (v *view) hidesResource(uri string) bool {
	if _, ok := v.resourceRoutes[uri]; ok {
		return false
	}
	if v.hiddenURIs[uri] {
		return true
	}
	for _, t := range v.hiddenTemplates {
		if t.Match(uri) != nil {
			return true
		}
	}
	return false
}
