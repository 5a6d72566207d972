// Package apps serves MCP Apps through the hub: the ui:// resources of
// the upstreams behind a view, namespaced per group, and the tools their
// views call by their servers' own names. It never imports the hub: the
// hub gives a Request what it needs of it (the view to route by, forward).
package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// MCP Apps (the io.modelcontextprotocol/ui extension, ext-apps SEP-1865)
// through the hub. A tool's _meta.ui.resourceUri names a ui:// resource
// that the host reads with resources/read and renders (mimeType
// text/html;profile=mcp-app). Two upstreams may both serve
// ui://dashboard, so the hub gives each group's ui:// URIs a namespace of
// their own, as agentgateway does with its targets: ui://<group>/<rest>
// for the server's ui://<rest>. Group names have no '/', so the group is
// what comes before the first one and the URIs of two groups never meet;
// the view keeps each URI's server and original, so the original is
// recovered exactly, never parsed back. Within a group two servers that
// serve the same ui:// URI collide, reported as tools' names are. Only
// URIs change: the definitions' other bytes, the resource's _meta.ui
// (domain, CSP, permissions), its mimeType and its HTML pass through.

// Extension is the MCP Apps extension's identifier.
const Extension = "io.modelcontextprotocol/ui"

// Scheme is the scheme of an MCP App's resources.
const Scheme = "ui://"

// uiRoute is where a ui:// URI the client sees goes: the server, and the
// URI that server knows.
type uiRoute struct {
	server *upstream.Server
	uri    string
}

// Table is a view's MCP Apps, built with the view and read without locks
// after. R is the hub's route of a tool.
type Table[R any] struct {
	// uiRoutes route the ui:// URIs of MCP Apps, as the client sees them
	// (ui://<group>/...), to their servers; appTools route the tools of
	// those servers by their own names, for the views' calls.
	uiRoutes map[string]uiRoute
	appTools map[string]R
	// apps is the MCP Apps extension's settings to declare to clients,
	// nil when no upstream behind the view offers it.
	apps json.RawMessage
	// hiddenURIs are the view's URIs a group's resources filter hides;
	// problems are the view's problems.
	hiddenURIs map[string]bool
	problems   *[]string
}

// New is the table of a view whose hidden URIs and problems are
// hiddenURIs and problems: a URI a group hides, and a collision, are
// noted there.
func New[R any](hiddenURIs map[string]bool, problems *[]string) *Table[R] {
	return &Table[R]{uiRoutes: map[string]uiRoute{}, hiddenURIs: hiddenURIs, problems: problems}
}

// Settings are the extension's settings to declare to clients, nil when
// no upstream behind the view offers it.
func (v *Table[R]) Settings() json.RawMessage { return v.apps }

// Len is how many ui:// URIs are routed.
func (v *Table[R]) Len() int { return len(v.uiRoutes) }

// Request is one client request as the hub serves it for MCP Apps.
type Request[R any] interface {
	// Params are the request's params, scanned once.
	Params() jsonrpc.Object
	// Apps is the view's table to route the request by: once found holds
	// in it, or no upstream is starting (within startup_wait), as a call
	// to a tool not known yet waits.
	Apps(ctx context.Context, found func(*Table[R]) bool) *Table[R]
	// Forward sends the request to s as method, name the name s knows
	// and params its params, through the policy, audit and approvals
	// every resource read goes through.
	Forward(ctx context.Context, method string, s *upstream.Server, name string, params jsonrpc.Object) (json.RawMessage, error)
}

// exposedUIURI is the URI the client sees for group's ui:// resource uri.
func exposedUIURI(group, uri string) string {
	return Scheme + group + "/" + strings.TrimPrefix(uri, Scheme)
}

// Tool is a tool definition of s in group g with the ui:// URIs its
// _meta names (ui.resourceUri, and the deprecated "ui/resourceUri" the
// ext-apps SDK still writes beside it) rewritten to the group's, each
// routed to s: a server may serve a view without listing it
// (resources/list may omit UI-only resources, ext-apps "Resource
// Discovery"), and the tool that names it says whose it is.
func (v *Table[R]) Tool(g *upstream.Group, s *upstream.Server, raw json.RawMessage) json.RawMessage {
	meta := jsonrpc.Field(raw, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return raw
	}
	out := meta
	if ui := jsonrpc.Field(meta, "ui"); len(ui) > 0 && ui[0] == '{' {
		if uri, ok := stringOf(jsonrpc.Field(ui, "resourceUri")); ok && strings.HasPrefix(uri, Scheme) {
			if ui, err := setString(ui, "resourceUri", v.routeUI(g, s, uri, "")); err == nil {
				out, _ = jsonrpc.SetField(out, "ui", ui)
			}
		}
	}
	if uri, ok := stringOf(jsonrpc.Field(meta, "ui/resourceUri")); ok && strings.HasPrefix(uri, Scheme) {
		if m, err := setString(out, "ui/resourceUri", v.routeUI(g, s, uri, "")); err == nil {
			out = m
		}
	}
	if len(out) == 0 || string(out) == string(meta) {
		return raw
	}
	if raw, err := jsonrpc.SetField(raw, "_meta", out); err == nil {
		return raw
	}
	return raw
}

// Resource is a resource s in group g lists under a ui:// URI, its uri
// rewritten to the group's; ok is false when the group hides it or
// another server of the group serves the same URI.
func (v *Table[R]) Resource(g *upstream.Group, s *upstream.Server, r upstream.Item) (raw json.RawMessage, ok bool) {
	exposed := v.routeUI(g, s, r.Key, r.Name)
	if route, routed := v.uiRoutes[exposed]; !routed || route.server != s {
		return nil, false
	}
	raw, err := setString(r.Raw, "uri", exposed)
	return raw, err == nil
}

// routeUI routes group g's URI for s's ui:// resource uri (named name, if
// listed) to s, unless g hides it or another server of g has it, and
// returns that URI.
func (v *Table[R]) routeUI(g *upstream.Group, s *upstream.Server, uri, name string) string {
	exposed := exposedUIURI(g.Config.Name, uri)
	names := []string{uri}
	if name != "" {
		names = append(names, name)
	}
	switch prev, dup := v.uiRoutes[exposed]; {
	case policy.Hidden(g.Config, policy.MethodResourcesRead, names...):
		v.hiddenURIs[exposed], v.hiddenURIs[uri] = true, true
	case dup && prev.server != s:
		*v.problems = append(*v.problems, fmt.Sprintf("ui resource %q of %s is hidden: %s in the same group serves the same URI", uri, s.Config.ID(), prev.server.Config.ID()))
	case !dup:
		v.uiRoutes[exposed] = uiRoute{server: s, uri: uri}
		v.offersApps(s, nil)
	}
	return exposed
}

// offersApps notes that s, behind the view, offers MCP Apps: with the
// extension's settings it declared (nil when it serves ui:// resources
// without declaring the extension, as the ext-apps examples do).
func (v *Table[R]) offersApps(s *upstream.Server, settings json.RawMessage) {
	if v.apps == nil || string(v.apps) == "{}" && settings != nil {
		if settings == nil {
			settings = json.RawMessage(`{}`)
		}
		v.apps = settings
	}
}

// Note notes whether s offers MCP Apps by what it declared or, while
// it starts and its lists are not in the view, by the tools of its last
// run: the handshake of a client that comes as the hub starts reflects
// it (see the hub's view.extensions).
func (v *Table[R]) Note(s *upstream.Server) {
	if settings, ok := s.Capabilities().Extensions[Extension]; ok {
		if raw, err := jsonrpc.Marshal(settings); err == nil && len(raw) > 0 && raw[0] == '{' {
			v.offersApps(s, raw)
		}
	}
	if v.apps != nil {
		return
	}
	if tools, ok := s.LastTools(); ok {
		for _, t := range tools {
			if uri, _ := stringOf(jsonrpc.Field(jsonrpc.Field(jsonrpc.Field(t.Raw, "_meta"), "ui"), "resourceUri")); strings.HasPrefix(uri, Scheme) {
				v.offersApps(s, nil)
				return
			}
		}
	}
}

// Read reads a ui:// resource through the URI the client sees: from its
// server, under the URI the server knows, the contents' uri given back
// as the client asked it and everything else (mimeType, _meta.ui, the
// HTML) as the server sent it. ok is false when uri is no such URI.
func Read[R any](ctx context.Context, req Request[R], uri string) (res json.RawMessage, ok bool, err error) {
	if !strings.HasPrefix(uri, Scheme) {
		return nil, false, nil
	}
	// A route from the tools of a server's last run (flat mode, while it
	// starts) waits for the server, as a call of such a tool does.
	v := req.Apps(ctx, func(v *Table[R]) bool {
		r, ok := v.uiRoutes[uri]
		return ok && r.server.Status().State != upstream.StateStarting
	})
	r, ok := v.uiRoutes[uri]
	if !ok {
		return nil, false, nil
	}
	params, err := req.Params().With(jsonrpc.Member{Key: "uri", Value: quote(r.uri)})
	if err != nil {
		return nil, true, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	obj, err := jsonrpc.ScanObject(params)
	if err != nil {
		return nil, true, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	res, err = req.Forward(ctx, policy.MethodResourcesRead, r.server, r.uri, obj)
	if err != nil {
		return res, true, err
	}
	return renameContents(res, r.uri, uri), true, nil
}

// renameContents is a resources/read result with the uri of each of its
// contents that is from given to, the rest of its bytes as they are.
func renameContents(res json.RawMessage, from, to string) json.RawMessage {
	var r struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(res, &r) != nil || len(r.Contents) == 0 {
		return res
	}
	changed := false
	for i, c := range r.Contents {
		if uri, ok := stringOf(jsonrpc.Field(c, "uri")); ok && uri == from {
			if c, err := jsonrpc.SetField(c, "uri", quote(to)); err == nil {
				r.Contents[i], changed = c, true
			}
		}
	}
	if !changed {
		return res
	}
	out, err := jsonrpc.SetField(res, "contents", jsonArray(r.Contents))
	if err != nil {
		return res
	}
	return out
}

// jsonArray is items as one JSON array.
func jsonArray(items []json.RawMessage) json.RawMessage {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	b := append(make([]byte, 0, n), '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// CalledTool is the route of a view's call of its server's tool name,
// which waits as a call of any tool does while upstreams start.
func CalledTool[R any](ctx context.Context, req Request[R], name string) (R, bool) {
	v := req.Apps(ctx, func(v *Table[R]) bool { _, ok := v.appTools[name]; return ok })
	r, ok := v.appTools[name]
	return r, ok
}

// RouteTools routes the tools of the servers that serve ui:// resources
// by their own names too: a view calls its server's tools by the names it
// knows (the ext-apps App's callServerTool, which the host passes on as a
// tools/call), and through the hub those names are prefixed (flat mode)
// or not listed at all (dynamic mode). A name that two such tools share,
// or that the view lists for another tool, is not routed: which server's
// view called it cannot be told. tools are the tools of the view's groups
// by their names in their groups, server says whose a route is, and
// listed whether the view lists a tool by that name (a meta-tool's
// included).
func (v *Table[R]) RouteTools(tools iter.Seq2[string, R], server func(R) *upstream.Server, listed func(name string) bool) {
	servers := map[*upstream.Server]bool{}
	for _, r := range v.uiRoutes {
		servers[r.server] = true
	}
	if len(servers) == 0 {
		return
	}
	v.appTools = map[string]R{}
	ambiguous := map[string]bool{}
	for name, r := range tools {
		if !servers[server(r)] || ambiguous[name] {
			continue
		}
		if listed(name) {
			continue
		}
		if prev, dup := v.appTools[name]; dup && server(prev) != server(r) {
			delete(v.appTools, name)
			ambiguous[name] = true
			continue
		}
		v.appTools[name] = r
	}
}

// setString returns obj, an object, with key set to the string value,
// leaving every other field byte for byte as it was.
func setString(obj json.RawMessage, key string, value string) (json.RawMessage, error) {
	return jsonrpc.SetField(obj, key, quote(value))
}

// quote is s as a JSON string (see jsonrpc.Marshal).
func quote(s string) json.RawMessage {
	q, _ := jsonrpc.Marshal(s) // a string always encodes
	return q
}

// stringOf decodes a raw JSON string; ok is false for any other value.
func stringOf(raw []byte) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
