package skills

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Route is where a URI the client was shown goes: the server that owns it
// (S, the hub's upstream server) and the namespace that maps the URI both
// ways.
type Route[S any] struct {
	Owner S
	// ID names the owner in problems (group/server).
	ID string
	Namespace
	// DirectoryRead says the owner serves resources/directory/read.
	DirectoryRead bool
}

// Source is one server's skills, as the view hands them to Add.
type Source[S any] struct {
	Route[S]
	// Entries are its skills/list entries, each with its SKILL.md URI as
	// the server knows it.
	Entries []Entry
	// Hidden says whether the group hides a skill, by its SKILL.md URI as
	// the server knows it and by its name (the group's resources list:
	// a skill is a resource).
	Hidden func(uri, name string) bool
}

// Entry is one skills/list entry: its raw JSON and its SKILL.md URI.
type Entry struct {
	URI string
	Raw json.RawMessage
}

// Table is the merged catalog of a view: what skills/list shows, and the
// routes back. Build it with Add, one server at a time in config order;
// it is read without locks once built.
type Table[S any] struct {
	entries []json.RawMessage
	skills  map[string]*Route[S] // exposed SKILL.md URI -> owner
	roots   map[string]*Route[S] // exposed skill directory (ends in /) -> owner
	hidden  map[string]bool      // exposed directories of skills the groups hide
	// spaces are the owners of each namespace root (skill://<group>/, or
	// skill:// for groups with prefix: false), for a skill not listed:
	// skills/get takes a skill "listed or not", and a "dynamic" skill's
	// files need not be known.
	spaces        map[string][]*Route[S]
	directoryRead bool
	// Problems are collisions and entries that cannot be served, worded
	// for the log as the view's other problems are.
	Problems []string
}

// New is an empty table.
func New[S any]() *Table[S] {
	return &Table[S]{skills: map[string]*Route[S]{}, roots: map[string]*Route[S]{}, hidden: map[string]bool{}, spaces: map[string][]*Route[S]{}}
}

// Add merges the skills of one server. A skill whose exposed URI another
// server already has is left out and reported, as a tool whose name
// collides is.
func (t *Table[S]) Add(src Source[S]) {
	r := &src.Route
	space := Scheme
	if r.Prefix {
		space = r.root()
	}
	t.spaces[space] = append(t.spaces[space], r)
	t.directoryRead = t.directoryRead || r.DirectoryRead
	for _, e := range src.Entries {
		dir, ok := skillDir(e.URI)
		if !ok {
			t.Problems = append(t.Problems, fmt.Sprintf("skill %q of %s is left out: its URI does not end in /SKILL.md", e.URI, r.ID))
			continue
		}
		exposed := r.Expose(e.URI)
		if src.Hidden != nil && src.Hidden(e.URI, frontmatterName(e.Raw)) {
			t.hidden[r.Expose(dir)] = true
			continue
		}
		if prev, dup := t.skills[exposed]; dup {
			t.Problems = append(t.Problems, fmt.Sprintf("skill %q of %s is hidden: %s lists the same URI (set prefix: true on the group)", exposed, r.ID, prev.ID))
			continue
		}
		raw, err := RewriteEntry(e.Raw, r.Expose)
		if err != nil {
			t.Problems = append(t.Problems, fmt.Sprintf("skill %q of %s is left out: %v", e.URI, r.ID, err))
			continue
		}
		t.skills[exposed] = r
		t.roots[r.Expose(dir)] = r
		t.entries = append(t.entries, raw)
	}
}

// Offered reports whether any server of the table serves the extension,
// with or without skills.
func (t *Table[S]) Offered() bool { return t != nil && len(t.spaces) > 0 }

// Capability is the extension's value in capabilities.extensions:
// directoryRead when any of the servers serves it.
func (t *Table[S]) Capability() map[string]any {
	if t.directoryRead {
		return map[string]any{"directoryRead": true}
	}
	return map[string]any{}
}

// Entries are the merged skills/list entries, in config order.
func (t *Table[S]) Entries() []json.RawMessage {
	if t == nil {
		return nil
	}
	return t.entries
}

// Skill is the route of a skill by its exposed SKILL.md URI: a listed one,
// or else one of a namespace only one server serves. nil when none, or
// when the groups hide it.
func (t *Table[S]) Skill(uri string) *Route[S] {
	if t == nil {
		return nil
	}
	if r := t.skills[uri]; r != nil {
		return r
	}
	if dir, ok := skillDir(uri); !ok || t.hides(dir) {
		return nil
	}
	return t.space(uri)
}

// File is the route of a skill's file or directory by its exposed URI:
// the owner of the listed skill whose directory holds it, or else the one
// server of its namespace. nil when none, or when the groups hide it.
func (t *Table[S]) File(uri string) *Route[S] {
	if t == nil || t.hides(uri) {
		return nil
	}
	if r := t.skills[uri]; r != nil {
		return r
	}
	if r := t.roots[uri+"/"]; r != nil { // a skill's directory itself
		return r
	}
	for dir := parent(uri); dir != ""; dir = parent(strings.TrimSuffix(dir, "/")) {
		if r := t.roots[dir]; r != nil {
			return r
		}
	}
	return t.space(uri)
}

// space is the one server of uri's namespace, nil when there are none or
// several (which of them has it cannot be told).
func (t *Table[S]) space(uri string) *Route[S] {
	if !strings.HasPrefix(uri, Scheme) {
		return nil
	}
	rest := uri[len(Scheme):]
	if group, _, ok := strings.Cut(rest, "/"); ok {
		if rs := t.spaces[Scheme+group+"/"]; len(rs) > 0 {
			if len(rs) == 1 {
				return rs[0]
			}
			return nil
		}
	}
	if rs := t.spaces[Scheme]; len(rs) == 1 {
		return rs[0]
	}
	return nil
}

// hides reports whether uri is in the directory of a skill a group hides.
func (t *Table[S]) hides(uri string) bool {
	if len(t.hidden) == 0 {
		return false
	}
	for dir := parent(uri); dir != ""; dir = parent(strings.TrimSuffix(dir, "/")) {
		if t.hidden[dir] {
			return true
		}
	}
	return t.hidden[uri] || t.hidden[uri+"/"]
}

// skillDir is the directory of a SKILL.md URI, with its trailing slash.
func skillDir(uri string) (string, bool) {
	dir, ok := strings.CutSuffix(uri, "/SKILL.md")
	if !ok || dir == "" || strings.HasSuffix(dir, ":/") {
		return "", false
	}
	return dir + "/", true
}

// parent is the directory holding uri, with its trailing slash; "" at the
// root of the scheme (skill://).
func parent(uri string) string {
	i := strings.LastIndexByte(uri, '/')
	if i < 0 {
		return ""
	}
	dir := uri[:i+1]
	if strings.HasSuffix(dir, "://") {
		return ""
	}
	return dir
}

// frontmatterName is the skill's frontmatter name, "" when it has none.
func frontmatterName(entry json.RawMessage) string {
	var e struct {
		Frontmatter struct {
			Name string `json:"name"`
		} `json:"frontmatter"`
	}
	_ = json.Unmarshal(entry, &e)
	return e.Frontmatter.Name
}
