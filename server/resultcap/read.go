package resultcap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Scheme begins the URI of a kept result: Scheme + id, and ?page=N for
// one page (from 1; without it, the first). These URIs are not listed in
// resources/list: each is for the session that made the call alone.
const Scheme = "dynamic-mcp://results/"

// pageOverhead is what a page's resources/read answer takes beside the
// page's text: its URI, mimeType, _meta, and the fields 2026-07-28 adds.
const pageOverhead = 400

// IsURI reports whether uri names a kept result (or claims to).
func IsURI(uri string) bool { return strings.HasPrefix(uri, "dynamic-mcp:") }

// Find is the kept result uri names, and what uri asks of it (its query),
// if caller may read it. named is false when uri is no result's URI at
// all; r is nil when it names none that caller may read: an unknown id,
// one expired, and another caller's are all the same to it.
func (s *Store) Find(uri, caller string) (r *Result, query string, named bool) {
	id, query, _ := strings.Cut(strings.TrimPrefix(uri, Scheme), "?")
	if !strings.HasPrefix(uri, Scheme) || id == "" {
		return nil, "", false
	}
	return s.get(id, caller), query, true
}

// Page is the page query asks for ("" for the first, page=N), or the
// invalid params error to answer with.
func (r *Result) Page(query string) (int, error) {
	if query == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(query, "page="))
	if !strings.HasPrefix(query, "page=") || err != nil || n < 1 || n > len(r.pages) {
		return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: %s has pages 1 to %d (?page=N)", Scheme+r.id, len(r.pages)))
	}
	return n, nil
}

// Read is the resources/read answer of page n of r: its bytes, as text,
// or as a base64 blob when the result is no valid UTF-8.
func (r *Result) Read(n int) (json.RawMessage, error) {
	contents := map[string]any{"uri": fmt.Sprintf("%s?page=%d", Scheme+r.id, n), "mimeType": "application/json"}
	if r.blob {
		contents["blob"] = base64.StdEncoding.EncodeToString(r.page(n))
	} else {
		contents["text"] = string(r.page(n))
	}
	return jsonrpc.Marshal(map[string]any{
		"contents": []any{contents},
		"_meta":    map[string]any{"dynamic-mcp/page": n, "dynamic-mcp/pages": len(r.pages), "dynamic-mcp/bytes": len(r.data)},
	})
}
