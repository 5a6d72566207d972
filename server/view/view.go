// Package view is what a session of the hub sees of its upstreams: the
// lists (tools, prompts, resources, templates) built from the upstreams'
// cached lists, whenever they change, for the config's mode and profile;
// the names the client uses and where each goes (a Route); the meta-tools
// of dynamic mode (get_dynamic_tools, call_dynamic_tool,
// search_dynamic_tools); pagination of the lists; and the upstreams'
// instructions. A View is immutable once built and read without locks.
// It imports no hub: what the hub's other concerns add while a view is
// built they add through an Extension.
package view

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/yosida95/uritemplate/v3"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Route says where a name the client uses goes: which server, and the
// name that server knows it by.
type Route struct {
	Server *upstream.Server
	Name   string
	// Cached says the tool is known from the server's last run only: the
	// server is still starting (see upstream.Server.LastTools).
	Cached bool
	// Tool is the tool's definition as its server listed it, set in every
	// tool's route (nil for a prompt's): its InputSchema, found once when
	// the list was read (not for every tool each time the view is built,
	// nor by each call), checks a call's arguments (server/validateargs).
	Tool *upstream.Item
}

type templateRoute struct {
	template *uritemplate.Template
	server   *upstream.Server
	hidden   config.Filter // the group's resources filter, for the URIs it matches
}

// GroupView is one group as the client sees it.
type GroupView struct {
	Name, Description string
	State             upstream.State // ready if any server is
	Reason            string         // why it is not ready
	Tools             []json.RawMessage
	ToolRoutes        map[string]Route // upstream tool name -> server
	// Instructions are the ready servers' own (see groupInstructions),
	// "" when the group says instructions: false.
	Instructions string
}

// View is everything the client sees, built from the upstreams' cached
// lists whenever they change, then read without locks (it is immutable).
// What the hub's other concerns keep per view (the clients: rules' shaped
// lists, MCP Apps' routes, the skills) the hub keeps beside it.
type View struct {
	Mode       config.Mode // the mode the view was built for
	Groups     []*GroupView
	GroupIndex map[string]*GroupView

	ToolsList  json.RawMessage  // the whole tools/list result
	FlatRoutes map[string]Route // flat mode, and a group's expose: in dynamic mode: exposed tool name -> upstream

	// Search is the index search_dynamic_tools answers from, nil when the
	// tool is not offered (flat mode, search: off, or auto with few tools).
	Search *ToolIndex

	Prompts      []json.RawMessage
	PromptRoutes map[string]Route

	Resources      []json.RawMessage
	ResourceRoutes map[string]*upstream.Server

	Templates      []json.RawMessage
	templateRoutes []templateRoute

	// HiddenURIs and hiddenTemplates are the resources and templates a
	// group's resources filter hides. A URI they cover is answered as one
	// that does not exist by every method (read, subscribe, complete) and
	// its notifications/resources/updated never reach a client, even
	// where another server's template or the subscription fallback would
	// otherwise take it.
	HiddenURIs      map[string]bool
	hiddenTemplates []*uritemplate.Template

	// Starting says some enabled server is still starting: its lists are
	// not in the view yet.
	Starting bool
	// Unknown says some enabled server is still starting and its tools
	// are not known from its last run either (a flat view lists those).
	Unknown bool

	// hashes of the whole lists, to tell whether a client's view changed.
	ToolsHash, PromptsHash, ResourcesHash uint64

	// Problems found while building, such as name collisions; logged once
	// when they first appear.
	Problems []string
	// Warnings are what the hub serves anyway but the user should hear
	// about, such as a policy rule naming an argument a tool does not
	// have; logged once when they first appear.
	Warnings []string
}

// Extension is what another concern of the hub adds to a view while
// Build reads the upstreams' lists (the hub's MCP Apps and Skills): it
// holds the view being built, and is called in build order.
type Extension interface {
	// Lists are the lists of s, a server of g, that the view is to read:
	// the extension takes out of them what it shows itself.
	Lists(g *upstream.Group, s *upstream.Server, lists upstream.Lists) upstream.Lists
	// Tool is a tool definition of s as the view lists it.
	Tool(g *upstream.Group, s *upstream.Server, raw json.RawMessage) json.RawMessage
	// Resource says whether a resource of s is the extension's (mine);
	// if so, raw is what the view lists for it when ok.
	Resource(g *upstream.Group, s *upstream.Server, r upstream.Item) (raw json.RawMessage, ok, mine bool)
	// Done is called once every group is read: more is what else, beside
	// the resources and templates, a client hears of as a change of them.
	Done() (more []json.RawMessage)
}

// noExtension adds nothing.
type noExtension struct{}

func (noExtension) Lists(_ *upstream.Group, _ *upstream.Server, l upstream.Lists) upstream.Lists {
	return l
}
func (noExtension) Tool(_ *upstream.Group, _ *upstream.Server, raw json.RawMessage) json.RawMessage {
	return raw
}
func (noExtension) Resource(*upstream.Group, *upstream.Server, upstream.Item) (json.RawMessage, bool, bool) {
	return nil, false, false
}
func (noExtension) Done() []json.RawMessage { return nil }

// New is an empty view in mode, for Build to fill.
func New(mode config.Mode) *View {
	return &View{
		Mode:           mode,
		GroupIndex:     map[string]*GroupView{},
		FlatRoutes:     map[string]Route{},
		PromptRoutes:   map[string]Route{},
		ResourceRoutes: map[string]*upstream.Server{},
		HiddenURIs:     map[string]bool{},
	}
}

// GroupStarting reports whether the group name is still starting.
func (v *View) GroupStarting(name string) bool {
	g := v.GroupIndex[name]
	return g != nil && g.State == upstream.StateStarting
}

// Build computes the client's view of mgr in v's mode, of the groups only
// (nil: every group) with expose lists from them (a profile's view, see
// config.WithProfile), checking the tools' input schemas against pol's
// argument rules (pol may be nil). In dynamic mode search says whether
// search_dynamic_tools is offered; its index is built by the view's first
// search, not here on the hub's event loop. maxTools, when above zero,
// caps the tools tools/list shows (see config.Settings.MaxTools). ext
// (nil: none) adds what the hub's other concerns show.
func (v *View) Build(only []*config.Group, search config.SearchMode, maxTools int, mgr *upstream.Manager, pol *policy.Policy, ext Extension) {
	if ext == nil {
		ext = noExtension{}
	}
	mode := v.Mode
	var flatTools, exposed []json.RawMessage
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
		gv := &GroupView{Name: g.Config.Name, Description: g.Config.Description, ToolRoutes: map[string]Route{}}
		gv.State, gv.Reason = groupState(g)
		if g.Config.Instructions {
			gv.Instructions = groupInstructions(g)
		}
		v.Groups = append(v.Groups, gv)
		v.GroupIndex[gv.Name] = gv
		for _, s := range g.Servers {
			lists, cached := v.listsOf(s)
			lists = ext.Lists(g, s, lists)
			for i, t := range lists.Tools {
				if policy.Hidden(g.Config, policy.MethodToolsCall, t.Key) {
					continue // hidden: as if the server did not have it
				}
				if pol != nil {
					v.Warnings = append(v.Warnings, pol.UnknownArgs(g.Config.Name, s.Config.Name, t.Key, jsonrpc.Field(t.Raw, "inputSchema"))...)
				}
				if prev, dup := gv.ToolRoutes[t.Key]; dup {
					v.Problems = append(v.Problems, fmt.Sprintf("tool %q of %s is hidden: %s in the same group has a tool of that name", t.Key, s.Config.ID(), prev.Server.Config.ID()))
					continue
				}
				gv.ToolRoutes[t.Key] = Route{Server: s, Name: t.Key, Cached: cached, Tool: &lists.Tools[i]}
				t.Raw = ext.Tool(g, s, t.Raw)
				gv.Tools = append(gv.Tools, t.Raw)
				if mode != config.ModeFlat {
					continue
				}
				name := ExposedName(g.Config.Name, t.Key, g.Config.Prefix)
				raw, ok := v.claim(owner, "tool", name, s, t.Raw, " (set prefix: true on the group)")
				if !ok {
					continue
				}
				v.FlatRoutes[name] = gv.ToolRoutes[t.Key]
				flatTools = append(flatTools, raw)
			}
			for _, p := range lists.Prompts {
				if policy.Hidden(g.Config, policy.MethodPromptsGet, p.Key) {
					continue
				}
				name := ExposedName(g.Config.Name, p.Key, g.Config.Prefix)
				raw, ok := v.claim(promptOwner, "prompt", name, s, p.Raw, "")
				if !ok {
					continue
				}
				v.PromptRoutes[name] = Route{Server: s, Name: p.Key}
				v.Prompts = append(v.Prompts, raw)
			}
			for _, r := range lists.Resources {
				if raw, ok, mine := ext.Resource(g, s, r); mine {
					if ok {
						v.Resources = append(v.Resources, raw)
					}
					continue
				}
				if policy.Hidden(g.Config, policy.MethodResourcesRead, r.Key, r.Name) {
					v.HiddenURIs[r.Key] = true
					continue
				}
				if prev, dup := v.ResourceRoutes[r.Key]; dup {
					v.Problems = append(v.Problems, fmt.Sprintf("resource %q of %s is hidden: %s lists the same URI", r.Key, s.Config.ID(), prev.Config.ID()))
					continue
				}
				v.ResourceRoutes[r.Key] = s
				v.Resources = append(v.Resources, r.Raw)
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
					v.Problems = append(v.Problems, fmt.Sprintf("resource template %q of %s is not a valid URI template: %v", t.Key, s.Config.ID(), err))
					continue
				}
				v.templateRoutes = append(v.templateRoutes, templateRoute{template: tmpl, server: s, hidden: g.Config.Resources})
				v.Templates = append(v.Templates, t.Raw)
			}
		}
		if mode == config.ModeDynamic {
			exposed = append(exposed, v.expose(g, gv, owner)...)
		}
	}
	more := ext.Done()
	if mode == config.ModeFlat {
		v.ToolsList = ListResult("tools", CapTools(flatTools, maxTools), "")
	} else {
		v.Search = buildToolIndex(v.Groups, search)
		v.ToolsList = ListResult("tools", CapTools(append(metaTools(v.Groups, v.Search != nil), exposed...), maxTools), "")
	}
	v.ToolsHash = HashOf(v.ToolsList)
	v.PromptsHash = HashOf(v.Prompts...)
	// Skills change with the resources their files are: a client hears
	// of both by notifications/resources/list_changed, as from the server.
	v.ResourcesHash = HashOf(append(append(append([]json.RawMessage{}, v.Resources...), append([]json.RawMessage{json.RawMessage("|")}, v.Templates...)...),
		append([]json.RawMessage{json.RawMessage("|")}, more...)...)...)
}

// listsOf are the lists of s the view shows, and notes whether s is
// starting. While it starts, a flat view shows the tools of its last run,
// if they are known (cached), so that a client that lists tools once,
// right after it starts the hub, gets them (see upstream.Server.LastTools);
// a dynamic view shows the groups alone until they are ready, as before.
func (v *View) listsOf(s *upstream.Server) (lists upstream.Lists, cached bool) {
	if s.Status().State != upstream.StateStarting || s.Config.Disabled {
		return s.Lists(), false
	}
	v.Starting = true
	if v.Mode == config.ModeFlat {
		if tools, ok := s.LastTools(); ok {
			return upstream.Lists{Tools: tools}, true
		}
	}
	v.Unknown = true
	return upstream.Lists{}, false
}

// CapTools is the first max of tools, or all of them when max is not
// above zero.
func CapTools(tools []json.RawMessage, max int) []json.RawMessage {
	if max > 0 && len(tools) > max {
		return tools[:max]
	}
	return tools
}

// HashOf is a hash of the byte strings, in order, with their boundaries.
func HashOf(parts ...json.RawMessage) uint64 {
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

// ResolveResource finds the server that owns uri: the one that listed it,
// or else the first whose template matches it, in config order. A URI a
// group hides has no owner, unless another group lists it visibly.
func (v *View) ResolveResource(uri string) *upstream.Server {
	if s, ok := v.ResourceRoutes[uri]; ok {
		return s
	}
	if v.HidesResource(uri) {
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

// CompletionServer is the server a completion for the resource template
// (or resource) uri goes to, nil for none.
func (v *View) CompletionServer(uri string) *upstream.Server {
	for _, t := range v.templateRoutes {
		if t.template.Raw() == uri {
			return t.server
		}
	}
	return v.ResolveResource(uri)
}

// HidesResource reports whether uri is one a group's resources filter
// hides: a resource listed under that URI, or a URI of a hidden template.
// A URI that some group lists visibly is not hidden.
func (v *View) HidesResource(uri string) bool {
	if _, ok := v.ResourceRoutes[uri]; ok {
		return false
	}
	if v.HiddenURIs[uri] {
		return true
	}
	for _, t := range v.hiddenTemplates {
		if t.Match(uri) != nil {
			return true
		}
	}
	return false
}

// profileGroup is the group of only named name, nil when there is none:
// a profile's view shows the groups only holds, each as only has it (its
// expose: list, see config.WithProfile).
func profileGroup(only []*config.Group, name string) *config.Group {
	for _, g := range only {
		if g.Name == name {
			return g
		}
	}
	return nil
}
