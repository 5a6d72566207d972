package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy/gate"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// resultScheme begins the URI of a kept result: resultScheme + id, and
// ?page=N for one page (from 1; without it, the first). These URIs are
// not listed in resources/list: each is for the session that made the
// call alone.
const resultScheme = "dynamic-mcp://results/"

// pageOverhead is what a page's resources/read answer takes beside the
// page's text: its URI, mimeType, _meta, and the fields 2026-07-28 adds.
const pageOverhead = 400

// capResult is the result of the tools/call req forwarded upstream, cut
// to the client's max_result when it is over it, the whole kept for the
// session to read (see resultcap.go); any other result is res itself.
func (h *Hub) capResult(req *request, res json.RawMessage) json.RawMessage {
	c := req.tool
	if c == nil || len(res) == 0 {
		return res
	}
	limit := req.snap.cfg.MaxResultFor(req.sess.GetClientInfo().Name, req.sess.profileName(req.snap.cfg))
	if limit <= 0 || len(res) <= limit || isInputRequired(res) {
		return res
	}
	target := max(limit-resultEnvelope-len(req.msg.ID), limit/2) // an id of kilobytes makes its own answer long
	r := &storedResult{caller: caller(req.sess), data: res, group: c.server.Config.Group, server: c.server.Config.Name,
		tool: c.name, args: bytes.Clone(c.args)} // not a slice of the request's params, kept whole
	room := target - pageOverhead
	r.pages, r.blob = paginate(res, room)
	link := resultLink{tool: c.name, pageSize: room, cap: limit}
	if r.blob {
		link.pageSize = room / 4 * 3
	}
	if err := h.results.put(r); err != nil {
		link.why = err.Error()
		h.logger.Warn("tool result cut and not kept", "upstream", c.server.Config.ID(), "tool", c.name, "bytes", len(res), "err", err)
	} else {
		link.uri, link.pages = resultScheme+r.id, len(r.pages)
	}
	h.results.cut.Add(1)
	out := fitResult(res, target, link)
	h.logger.Debug("tool result cut to fit max_result", "upstream", c.server.Config.ID(), "tool", c.name, "bytes", len(res), "cut_to", len(out), "max_result", limit, "uri", link.uri)
	return out
}

// isResultURI reports whether uri names a kept result (or claims to).
func isResultURI(uri string) bool { return strings.HasPrefix(uri, "dynamic-mcp:") }

// readResult answers resources/read of a kept result: one page of its
// bytes, for the session that made the call, if the policy still lets
// that call through. It is audited as a read of the call's group and
// tool. Anything the caller may not read is answered as a URI that does
// not exist.
func (h *Hub) readResult(req *request, uri string) (json.RawMessage, error) {
	notFound := &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]string{"uri": uri}}
	id, query, _ := strings.Cut(strings.TrimPrefix(uri, resultScheme), "?")
	if !strings.HasPrefix(uri, resultScheme) || id == "" {
		return nil, notFound
	}
	r := h.results.get(id, caller(req.sess))
	if r == nil || req.snap.viewOf(req.sess.profileIn(req.snap.cfg)).groupIndex[r.group] == nil { // none, or its group is no longer the session's to see
		h.missed(req, uri)
		return nil, notFound
	}
	page := 1
	if query != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(query, "page="))
		if !strings.HasPrefix(query, "page=") || err != nil || n < 1 || n > len(r.pages) {
			return nil, errorf(codeInvalidParams, fmt.Sprintf("invalid params: %s has pages 1 to %d (?page=N)", resultScheme+id, len(r.pages)))
		}
		page = n
	}
	snap := req.snap
	if err := snap.audit.Admit(); err != nil {
		return nil, err
	}
	d := snap.policy.Decide(policy.Request{Group: r.group, Server: r.server, Method: policy.MethodToolsCall, Name: r.tool, Args: r.args})
	if snap.audit != nil {
		req.audit = &audit.Record{Time: time.Now().UTC(), Session: req.sess.id, Group: r.group, Server: r.server,
			Method: policy.MethodResourcesRead, Tool: r.tool, URI: uri, Decision: string(d.Action), Rule: d.Rule}
	}
	if c := req.call; c != nil {
		c.Group, c.Server, c.Target, c.Rule, c.Action = r.group, r.server, uri, d.Rule, string(d.Action)
	}
	if d.Action == config.ActionDeny {
		// A prompt rule is not asked again: the person let the call
		// through when it was made, and a page gives nothing new.
		return nil, gate.Blocked(d, "the call that made this result is not allowed now")
	}
	contents := map[string]any{"uri": fmt.Sprintf("%s?page=%d", resultScheme+id, page), "mimeType": "application/json"}
	if r.blob {
		contents["blob"] = base64.StdEncoding.EncodeToString(r.page(page))
	} else {
		contents["text"] = string(r.page(page))
	}
	return jsonrpc.Marshal(map[string]any{
		"contents": []any{contents},
		"_meta":    map[string]any{"dynamic-mcp/page": page, "dynamic-mcp/pages": len(r.pages), "dynamic-mcp/bytes": len(r.data)},
	})
}
