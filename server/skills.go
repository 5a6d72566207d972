package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/skills"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// This file serves the Skills extension (io.modelcontextprotocol/skills,
// SEP-2640) of the upstreams behind a view: skills/list merged across
// groups, skills/get, resources/read of skill files and
// resources/directory/read routed back to the server that owns them. The
// merge and the namespacing are server/skills'; what passes here is
// spliced, so frontmatter, digests, sizes and file bytes stay the
// server's own.

// skillTable is a view's merged skills.
type skillTable = skills.Table[*upstream.Server]

// skillRoute is where one of its URIs goes.
type skillRoute = skills.Route[*upstream.Server]

// addSkills takes the skills of s, a server of g, into t when s serves
// the extension, with its skill:// resources and templates namespaced into
// v's lists as its skills are. It returns lists without those, for the
// view's own resource loops; a server without the extension keeps its
// lists as they are.
func (v *view) addSkills(t *skillTable, g *upstream.Group, s *upstream.Server, lists upstream.Lists) upstream.Lists {
	ext, declared := s.Capabilities().Extensions[skills.ExtensionID]
	if !declared && len(lists.Skills) == 0 {
		return lists
	}
	capability, _ := ext.(map[string]any)
	route := skills.Route[*upstream.Server]{Owner: s, ID: s.Config.ID(), Namespace: skills.Namespace{Group: g.Config.Name, Prefix: g.Config.Prefix}}
	route.DirectoryRead, _ = capability["directoryRead"].(bool)
	hidden := func(uri, name string) bool { return policy.Hidden(g.Config, policy.MethodSkillsGet, uri, name) }
	entries := make([]skills.Entry, len(lists.Skills))
	for i, it := range lists.Skills {
		entries[i] = skills.Entry{URI: it.Key, Raw: it.Raw}
	}
	t.Add(skills.Source[*upstream.Server]{Route: route, Entries: entries, Hidden: hidden})

	var rest []upstream.Item
	for _, r := range lists.Resources {
		if !strings.HasPrefix(r.Key, skills.Scheme) {
			rest = append(rest, r)
			continue
		}
		if hidden(r.Key, r.Name) {
			continue // as its skill is
		}
		if raw, err := skills.RewriteField(r.Raw, "uri", route.Expose); err == nil {
			v.Resources = append(v.Resources, raw)
		}
	}
	lists.Resources = rest
	var templates []upstream.Item
	for _, tm := range lists.Templates {
		if !strings.HasPrefix(tm.Key, skills.Scheme) {
			templates = append(templates, tm)
			continue
		}
		// Shown for what it says (skill://<group>/{+path}), never routed
		// by: every skill:// URI goes by t.
		if raw, err := skills.RewriteField(tm.Raw, "uriTemplate", route.Expose); err == nil {
			v.Templates = append(v.Templates, raw)
		}
	}
	lists.Templates = templates
	return lists
}

// extensions are the view's capabilities.extensions: the Skills
// extension's when a server of the view serves it, or may: one is still
// starting, its capabilities not known yet, and a client that connects
// with the hub (a desktop client starts it) is to see the skills it
// brings, skills/list waiting for it as the first page of every list
// does. What such a server turns out not to serve is answered as for a
// skill or directory that does not exist. nil when no server serves it.
func (v *view) extensions() map[string]any {
	ext := map[string]any{}
	switch {
	case v.Starting:
		ext[skills.ExtensionID] = map[string]any{"directoryRead": true}
	case v.skills.Offered():
		ext[skills.ExtensionID] = v.skills.Capability()
	}
	if v.apps != nil {
		ext[appsExtension] = v.apps // apps.go
	}
	if len(ext) == 0 {
		return nil
	}
	return ext
}

// skillsGet answers skills/get: the entry of a skill, listed or not, from
// the server that owns its URI, with the URIs namespaced as skills/list
// shows them.
func (h *Hub) skillsGet(ctx context.Context, req *request, v *view) (json.RawMessage, error) {
	uri, ok := req.stringField("uri")
	if !ok || uri == "" {
		return nil, errorf(codeInvalidParams, "invalid params: skills/get needs a uri")
	}
	v = h.awaitRoute(ctx, req, v, func(v *view) bool { return v.skills.Skill(uri) != nil })
	r := v.skills.Skill(uri)
	if r == nil {
		return nil, errorf(codeInvalidParams, "No skill is served at "+uri)
	}
	res, err := h.forwardSkill(ctx, req, r, policy.MethodSkillsGet, uri)
	if err != nil {
		return nil, err
	}
	return rewritten(skills.RewriteSkill(res, r.Expose))
}

// readSkillFile answers resources/read of a skill's file: its bytes as the
// server sent them, under the URI the client asked for.
func (h *Hub) readSkillFile(ctx context.Context, req *request, r *skillRoute, uri string) (json.RawMessage, error) {
	res, err := h.forwardSkill(ctx, req, r, policy.MethodResourcesRead, uri)
	if err != nil {
		return nil, err
	}
	return rewritten(skills.RewriteResult(res, "contents", r.Expose))
}

// directoryRead answers resources/directory/read of a skill's directory,
// from the server that owns it, one page at a time: the cursor is the
// server's own.
func (h *Hub) directoryRead(ctx context.Context, req *request, v *view) (json.RawMessage, error) {
	uri, ok := req.stringField("uri")
	if !ok || uri == "" {
		return nil, errorf(codeInvalidParams, "invalid params: resources/directory/read needs a uri")
	}
	v = h.awaitRoute(ctx, req, v, func(v *view) bool { return v.skills.File(uri) != nil })
	r := v.skills.File(uri)
	if r == nil || !r.DirectoryRead {
		return nil, errorf(codeInvalidParams, uri+" is not a directory resource")
	}
	res, err := h.forwardSkill(ctx, req, r, policy.MethodDirectoryRead, uri)
	if err != nil {
		return nil, err
	}
	return rewritten(skills.RewriteResult(res, "resources", r.Expose))
}

// forwardSkill sends req to r's server as method, its uri the one the
// server knows, through the policy, audit and approvals every resource
// read goes through.
func (h *Hub) forwardSkill(ctx context.Context, req *request, r *skillRoute, method, uri string) (json.RawMessage, error) {
	up, ok := r.Upstream(uri)
	if !ok {
		return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": uri}}
	}
	p, err := req.params.With(jsonrpc.Member{Key: "uri", Value: quote(up)})
	if err != nil {
		return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
	}
	params, err := jsonrpc.ScanObject(p)
	if err != nil {
		return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
	}
	return h.forward(ctx, req, upcall{method: method, server: r.Owner, name: up, params: params})
}

// rewritten is a result whose URIs were namespaced; one that cannot be
// (not the shape the extension gives it) is an internal error, never the
// server's URIs passed on as they are.
func rewritten(res json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, errorf(codeInternalError, "the upstream's answer could not be read: "+err.Error())
	}
	return res, nil
}
