package skills

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// This file serves the Skills extension (io.modelcontextprotocol/skills,
// SEP-2640) of the upstreams behind a view: skills/list merged across
// groups, skills/get, resources/read of skill files and
// resources/directory/read routed back to the server that owns them. The
// merge and the namespacing are the table's; what passes here is
// spliced, so frontmatter, digests, sizes and file bytes stay the
// server's own.

// Request is one client request as the hub serves it for the extension.
type Request interface {
	// String reads a string of the request's params; ok is false when
	// the params are no object or the value no string.
	String(key string) (string, bool)
	// Params are the request's params, scanned once.
	Params() jsonrpc.Object
	// Skills is the view's table to route the request by: once found
	// holds in it, or no upstream is starting (within startup_wait), as a
	// call to a tool not known yet waits.
	Skills(ctx context.Context, found func(*Table[*upstream.Server]) bool) *Table[*upstream.Server]
	// Forward sends the request to s as method, name the name s knows
	// and params its params, through the policy, audit and approvals
	// every resource read goes through.
	Forward(ctx context.Context, method string, s *upstream.Server, name string, params jsonrpc.Object) (json.RawMessage, error)
}

// Add takes the skills of s, a server of g, into t when s serves the
// extension, with its skill:// resources and templates namespaced into
// the view's lists (resources, templates) as its skills are. It returns
// lists without those, for the view's own resource loops; a server
// without the extension keeps its lists as they are.
func Add(t *Table[*upstream.Server], g *upstream.Group, s *upstream.Server, lists upstream.Lists, resources, templates *[]json.RawMessage) upstream.Lists {
	ext, declared := s.Capabilities().Extensions[ExtensionID]
	if !declared && len(lists.Skills) == 0 {
		return lists
	}
	capability, _ := ext.(map[string]any)
	route := Route[*upstream.Server]{Owner: s, ID: s.Config.ID(), Namespace: Namespace{Group: g.Config.Name, Prefix: g.Config.Prefix}}
	route.DirectoryRead, _ = capability["directoryRead"].(bool)
	hidden := func(uri, name string) bool { return policy.Hidden(g.Config, policy.MethodSkillsGet, uri, name) }
	entries := make([]Entry, len(lists.Skills))
	for i, it := range lists.Skills {
		entries[i] = Entry{URI: it.Key, Raw: it.Raw}
	}
	t.Add(Source[*upstream.Server]{Route: route, Entries: entries, Hidden: hidden})

	var rest []upstream.Item
	for _, r := range lists.Resources {
		if !strings.HasPrefix(r.Key, Scheme) {
			rest = append(rest, r)
			continue
		}
		if hidden(r.Key, r.Name) {
			continue // as its skill is
		}
		if raw, err := RewriteField(r.Raw, "uri", route.Expose); err == nil {
			*resources = append(*resources, raw)
		}
	}
	lists.Resources = rest
	var kept []upstream.Item
	for _, tm := range lists.Templates {
		if !strings.HasPrefix(tm.Key, Scheme) {
			kept = append(kept, tm)
			continue
		}
		// Shown for what it says (skill://<group>/{+path}), never routed
		// by: every skill:// URI goes by t.
		if raw, err := RewriteField(tm.Raw, "uriTemplate", route.Expose); err == nil {
			*templates = append(*templates, raw)
		}
	}
	lists.Templates = kept
	return lists
}

// Get answers skills/get: the entry of a skill, listed or not, from the
// server that owns its URI, with the URIs namespaced as skills/list shows
// them.
func Get(ctx context.Context, req Request) (json.RawMessage, error) {
	uri, r, err := routed(ctx, req, "skills/get", (*Table[*upstream.Server]).Skill)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "No skill is served at "+clip.Echo(uri))
	}
	res, err := forward(ctx, req, r, policy.MethodSkillsGet, uri)
	if err != nil {
		return nil, err
	}
	return rewritten(RewriteSkill(res, r.Expose))
}

// ReadFile answers resources/read of a skill's file: its bytes as the
// server sent them, under the URI the client asked for.
func ReadFile(ctx context.Context, req Request, r *Route[*upstream.Server], uri string) (json.RawMessage, error) {
	res, err := forward(ctx, req, r, policy.MethodResourcesRead, uri)
	if err != nil {
		return nil, err
	}
	return rewritten(RewriteResult(res, "contents", r.Expose))
}

// DirectoryRead answers resources/directory/read of a skill's directory,
// from the server that owns it, one page at a time: the cursor is the
// server's own.
func DirectoryRead(ctx context.Context, req Request) (json.RawMessage, error) {
	uri, r, err := routed(ctx, req, "resources/directory/read", (*Table[*upstream.Server]).File)
	if err != nil {
		return nil, err
	}
	if r == nil || !r.DirectoryRead {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, clip.Echo(uri)+" is not a directory resource")
	}
	res, err := forward(ctx, req, r, policy.MethodDirectoryRead, uri)
	if err != nil {
		return nil, err
	}
	return rewritten(RewriteResult(res, "resources", r.Expose))
}

// routed is the uri req names (method needs one) and its route, as find
// finds it in the skills table: waited for (Request.Skills) while a
// server that may have it is starting.
func routed(ctx context.Context, req Request, method string, find func(*Table[*upstream.Server], string) *Route[*upstream.Server]) (string, *Route[*upstream.Server], error) {
	uri, ok := req.String("uri")
	if !ok || uri == "" {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs a uri")
	}
	t := req.Skills(ctx, func(t *Table[*upstream.Server]) bool { return find(t, uri) != nil })
	return uri, find(t, uri), nil
}

// forward sends req to r's server as method, its uri the one the server
// knows, through the policy, audit and approvals every resource read
// goes through.
func forward(ctx context.Context, req Request, r *Route[*upstream.Server], method, uri string) (json.RawMessage, error) {
	up, ok := r.Upstream(uri)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": clip.Echo(uri)}}
	}
	q, _ := jsonrpc.Marshal(up) // a string always encodes
	p, err := req.Params().With(jsonrpc.Member{Key: "uri", Value: q})
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	params, err := jsonrpc.ScanObject(p)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	return req.Forward(ctx, method, r.Owner, up, params)
}

// rewritten is a result whose URIs were namespaced; one that cannot be
// (not the shape the extension gives it) is an internal error, never the
// server's URIs passed on as they are.
func rewritten(res json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the upstream's answer could not be read: "+err.Error())
	}
	return res, nil
}
