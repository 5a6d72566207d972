// Package skills merges the Skills extension (io.modelcontextprotocol/skills,
// SEP-2640) of several upstream servers into one catalog, as the hub shows
// it to a client: each group's skill:// URIs namespaced by the group's name,
// as flat mode names its tools, and a route from every URI the client is
// shown back to the server that owns it and the URI that server knows.
//
// The table is pure: entries are spliced, never decoded and re-encoded, so
// that a skill's frontmatter, digests and sizes, and a file's bytes, reach
// the client exactly as the server sent them. Only the uri members change.
// The requests for skills (serve.go) go to their servers through the hub's
// forward, which a Request gives them: the package never imports the hub.
package skills

import (
	"encoding/json"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// ExtensionID is the extension's key in capabilities.extensions.
const ExtensionID = "io.modelcontextprotocol/skills"

// Scheme starts every URI the hub namespaces. A skill served under
// another scheme (a SkillSource with its own baseUri) keeps its URIs.
const Scheme = "skill://"

// Namespace is how one group's skill URIs are shown: skill://<group>/<rest>
// for skill://<rest>, or unchanged for a group with prefix: false. The
// skill's name (its frontmatter, which must equal its SKILL.md's and the
// last segment of its directory) is never changed: a host checks both.
type Namespace struct {
	Group  string
	Prefix bool
}

func (n Namespace) root() string { return Scheme + n.Group + "/" }

// Expose is the URI the client is shown for uri, as its server knows it.
func (n Namespace) Expose(uri string) string {
	if !n.Prefix || !strings.HasPrefix(uri, Scheme) {
		return uri
	}
	return n.root() + uri[len(Scheme):]
}

// Upstream is the URI the server knows for exposed, the URI the client
// was shown: Expose reversed. ok is false for a URI outside the
// namespace.
func (n Namespace) Upstream(exposed string) (uri string, ok bool) {
	if !n.Prefix {
		return exposed, true
	}
	if rest, found := strings.CutPrefix(exposed, n.root()); found {
		return Scheme + rest, true
	}
	if !strings.HasPrefix(exposed, Scheme) {
		return exposed, true // another scheme: never namespaced
	}
	return "", false
}

// RewriteEntry is a skill entry (of skills/list or skills/get) with its uri
// and the uri of each of its resources mapped by to; everything else,
// digests and sizes included, byte for byte. resources: "dynamic" stays.
func RewriteEntry(entry json.RawMessage, to func(string) string) (json.RawMessage, error) {
	out, err := rewriteURI(entry, to)
	if err != nil {
		return nil, err
	}
	return rewriteField(out, "resources", '[', func(list json.RawMessage) (json.RawMessage, error) { return rewriteURIs(list, to) })
}

// RewriteResult is a result with the uri of each object in its array
// field mapped by to: the contents of resources/read, the resources of
// resources/directory/read. A text or blob is kept byte for byte.
func RewriteResult(result json.RawMessage, field string, to func(string) string) (json.RawMessage, error) {
	return rewriteField(result, field, '[', func(list json.RawMessage) (json.RawMessage, error) { return rewriteURIs(list, to) })
}

// RewriteSkill is a skills/get result with its skill entry's URIs mapped.
func RewriteSkill(result json.RawMessage, to func(string) string) (json.RawMessage, error) {
	return rewriteField(result, "skill", '{', func(entry json.RawMessage) (json.RawMessage, error) { return RewriteEntry(entry, to) })
}

// rewriteField is obj with the value of its member key rewritten by
// rewrite, when that value opens with open (an array, an object); obj as
// it is otherwise.
func rewriteField(obj json.RawMessage, key string, open byte, rewrite func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	v := jsonrpc.Field(obj, key)
	if len(v) == 0 || v[0] != open {
		return obj, nil
	}
	out, err := rewrite(v)
	if err != nil {
		return nil, err
	}
	return jsonrpc.SetField(obj, key, out)
}

// rewriteURIs maps the uri of each object of the array list.
func rewriteURIs(list json.RawMessage, to func(string) string) (json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(list)+len(items)*16)
	b = append(b, '[')
	for i, it := range items {
		if len(it) > 0 && it[0] == '{' {
			var err error
			if it, err = rewriteURI(it, to); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']'), nil
}

// rewriteURI maps obj's uri, if it has a string one.
func rewriteURI(obj json.RawMessage, to func(string) string) (json.RawMessage, error) {
	return RewriteField(obj, "uri", to)
}

// RewriteField is obj with the string at key mapped by to (a resource's
// uri, a template's uriTemplate); obj as it is when key holds no string.
func RewriteField(obj json.RawMessage, key string, to func(string) string) (json.RawMessage, error) {
	var uri string
	if raw := jsonrpc.Field(obj, key); len(raw) == 0 || json.Unmarshal(raw, &uri) != nil {
		return obj, nil
	}
	next := to(uri)
	if next == uri {
		return obj, nil
	}
	q, err := jsonrpc.Marshal(next)
	if err != nil {
		return nil, err
	}
	return jsonrpc.SetField(obj, key, q)
}
