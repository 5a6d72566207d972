package skills

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// entry is a skills/list entry of the SDK's shape for uri, with one more
// file beside SKILL.md.
func entry(uri string) Entry {
	dir := strings.TrimSuffix(uri, "SKILL.md")
	name := dir[strings.LastIndex(strings.TrimSuffix(dir, "/"), "/")+1 : len(dir)-1]
	raw := `{"uri":"` + uri + `","frontmatter":{"name":"` + name + `","description":"d"},"resources":[` +
		`{"uri":"` + uri + `","digest":"sha256:aa","size":3},{"uri":"` + dir + `ref/A.md","digest":"sha256:bb","size":4}]}`
	return Entry{URI: uri, Raw: json.RawMessage(raw)}
}

func TestNamespaceRoundTrip(t *testing.T) {
	for _, n := range []Namespace{{Group: "alpha", Prefix: true}, {Group: "beta", Prefix: false}} {
		for _, uri := range []string{"skill://pdf/SKILL.md", "skill://acme/pdf/ref/A%20B.md", "https://example.com/skills/x/SKILL.md"} {
			up, ok := n.Upstream(n.Expose(uri))
			if !ok || up != uri {
				t.Errorf("%+v: %q -> %q -> %q, %v", n, uri, n.Expose(uri), up, ok)
			}
		}
	}
	n := Namespace{Group: "alpha", Prefix: true}
	if got := n.Expose("skill://pdf/SKILL.md"); got != "skill://alpha/pdf/SKILL.md" {
		t.Errorf("exposed %q", got)
	}
	if _, ok := n.Upstream("skill://beta/pdf/SKILL.md"); ok {
		t.Error("a URI of another group's namespace maps into alpha's")
	}
}

func TestTableMergeAndRoute(t *testing.T) {
	tb := New[string]()
	tb.Add(Source[string]{Route: Route[string]{Owner: "a", ID: "alpha/s", Namespace: Namespace{Group: "alpha", Prefix: true}, DirectoryRead: true},
		Entries: []Entry{entry("skill://pdf/SKILL.md"), entry("skill://secret/SKILL.md")},
		Hidden:  func(uri, name string) bool { return name == "secret" }})
	tb.Add(Source[string]{Route: Route[string]{Owner: "b", ID: "beta/s", Namespace: Namespace{Group: "beta", Prefix: true}},
		Entries: []Entry{entry("skill://pdf/SKILL.md")}})
	// Two unprefixed servers listing the same URI: the second is reported.
	for _, owner := range []string{"c", "d"} {
		tb.Add(Source[string]{Route: Route[string]{Owner: owner, ID: owner + "/s", Namespace: Namespace{Group: owner}},
			Entries: []Entry{entry("skill://tools/lint/SKILL.md")}})
	}

	var uris []string
	for _, raw := range tb.Entries() {
		var e struct {
			URI       string `json:"uri"`
			Resources []struct {
				URI, Digest string
				Size        int
			} `json:"resources"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		uris = append(uris, e.URI)
		if e.Resources[0].URI != e.URI || e.Resources[0].Digest != "sha256:aa" || e.Resources[1].Size != 4 {
			t.Errorf("entry rewritten wrong: %s", raw)
		}
	}
	want := []string{"skill://alpha/pdf/SKILL.md", "skill://beta/pdf/SKILL.md", "skill://tools/lint/SKILL.md"}
	if !slices.Equal(uris, want) {
		t.Fatalf("entries %v, want %v", uris, want)
	}
	if len(tb.Problems) != 1 || !strings.Contains(tb.Problems[0], `"skill://tools/lint/SKILL.md" of d/s is hidden: c/s lists the same URI`) {
		t.Errorf("problems %q", tb.Problems)
	}

	for uri, owner := range map[string]string{
		"skill://alpha/pdf/SKILL.md":       "a",
		"skill://beta/pdf/SKILL.md":        "b",
		"skill://alpha/pdf/ref/A.md":       "a",
		"skill://alpha/pdf/ref":            "a",
		"skill://alpha/pdf":                "a",
		"skill://beta/pdf/unlisted.md":     "b",
		"skill://alpha/other/SKILL.md":     "a", // alpha's one server: listed or not
		"skill://tools/lint/ref/A.md":      "c",
		"skill://alpha/secret/SKILL.md":    "",
		"skill://alpha/secret/ref/A.md":    "",
		"skill://alpha/secret":             "",
		"skill://gamma/pdf/SKILL.md":       "", // two unprefixed servers: not told apart
		"https://example.com/pdf/SKILL.md": "",
	} {
		r := tb.File(uri)
		got := ""
		if r != nil {
			got = r.Owner
		}
		if got != owner {
			t.Errorf("File(%s) is %q, want %q", uri, got, owner)
		}
	}
	if r := tb.Skill("skill://alpha/secret/SKILL.md"); r != nil {
		t.Errorf("a hidden skill is got from %s", r.ID)
	}
	if r := tb.File("skill://beta/pdf/SKILL.md"); r == nil {
		t.Fatal("no route")
	} else if up, _ := r.Upstream("skill://beta/pdf/SKILL.md"); up != "skill://pdf/SKILL.md" {
		t.Errorf("upstream URI %q", up)
	}
	if c := tb.Capability(); c["directoryRead"] != true {
		t.Errorf("capability %v", c)
	}
}

func TestRewriteKeepsBytes(t *testing.T) {
	res := json.RawMessage(`{"contents":[{"uri":"skill://pdf/x.bin","mimeType":"application/octet-stream","blob":"AAEC/w=="},{"uri":"skill://pdf/y.md","text":"caf\u00e9 <b>&amp;</b>"}],"_meta":{"k":1}}`)
	n := Namespace{Group: "g", Prefix: true}
	out, err := RewriteResult(res, "contents", n.Expose)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"uri":"skill://g/pdf/x.bin","mimeType":"application/octet-stream","blob":"AAEC/w=="},{"uri":"skill://g/pdf/y.md","text":"caf\u00e9 <b>&amp;</b>"}],"_meta":{"k":1}}`
	if string(out) != want {
		t.Errorf("rewritten:\n%s\nwant\n%s", out, want)
	}
	dyn := json.RawMessage(`{"skill":{"uri":"skill://x/SKILL.md","frontmatter":{"name":"x","description":"d"},"resources":"dynamic"}}`)
	out, err = RewriteSkill(dyn, n.Expose)
	if err != nil || string(out) != `{"skill":{"uri":"skill://g/x/SKILL.md","frontmatter":{"name":"x","description":"d"},"resources":"dynamic"}}` {
		t.Errorf("dynamic skill: %s, %v", out, err)
	}
}
