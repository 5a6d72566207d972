package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// skillsYAML is a flat hub, lists in pages of 3, in front of four fakes:
// group one serves the skills pdf, secret, docs and xlsx (in pages of 2),
// its resources deny-list hiding secret and a policy rule denying the
// reads of docs' ref/ files; group two has two servers that both serve a
// skill pdf; plain serves none. Profile plain shows plain alone, profile
// one shows one alone.
func skillsYAML(t *testing.T) string {
	return fmt.Sprintf(`mode: flat
state_dir: %q
audit: {path: "off"}
settings: {page_size: 3}
groups:
  one:
    description: first
    command: %[2]q
    args: ["-name", "one", "-skills", "pdf,secret,docs,xlsx"]
    resources: {deny: ["^skill://secret/"]}
    policy:
      - {action: deny, uri: "skill://docs/ref/**", description: no guides of docs}
  two:
    description: second
    servers:
      x: {command: %[2]q, args: ["-name", "x", "-skills", "pdf"]}
      y: {command: %[2]q, args: ["-name", "y", "-skills", "pdf"]}
  plain:
    description: no skills
    command: %[2]q
    args: ["-name", "plain"]
profiles:
  plain: {groups: [plain]}
  one: {groups: [one]}
`, t.TempDir(), fakeBin)
}

// skillsHub runs the hub of skillsYAML, its upstreams all up and its view
// built from them.
func skillsHub(t *testing.T) *Hub {
	t.Helper()
	h, mgr := runHub(t, skillsYAML(t), false)
	await.For(t, 10*time.Second, "the upstreams", func() bool {
		for _, s := range mgr.Servers() {
			if s.Status().State != upstream.StateReady {
				return false
			}
		}
		return true
	})
	await.For(t, 5*time.Second, "the view", func() bool {
		v := h.snapshot().view
		return !v.Starting && len(v.skills.Entries()) == 4
	})
	return h
}

// skillsClient is an initialized 2025-era session of profile (one a
// profile), and the capabilities the hub declared to it.
func skillsClient(t *testing.T, h *Hub, profile string) (*pipeClient, json.RawMessage) {
	t.Helper()
	c := servePipes(t, h, StdioOptions{Profile: profile, SessionID: "skills-" + profile})
	c.send(initializeMsg)
	caps := jsonrpc.Field(resultOf(t, c.answer("0")), "capabilities")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c, caps
}

// request sends method with params as id and returns the answer.
func (c *pipeClient) request(id int, method, params string) string {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	return c.answer(fmt.Sprint(id))
}

// listSkills follows skills/list's cursor to the end and returns each
// page's skill URIs.
func listSkills(t *testing.T, c *pipeClient, id int) [][]string {
	t.Helper()
	var pages [][]string
	cursor := ""
	for {
		params := "{}"
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		var page struct {
			Skills []struct {
				URI string `json:"uri"`
			} `json:"skills"`
			NextCursor string `json:"nextCursor"`
		}
		mustJSON(t, string(resultOf(t, c.request(id, "skills/list", params))), &page)
		id++
		var uris []string
		for _, s := range page.Skills {
			uris = append(uris, s.URI)
		}
		pages = append(pages, uris)
		if cursor = page.NextCursor; cursor == "" || len(pages) > 10 {
			return pages
		}
	}
}

// uriParams are the params of a request for uri.
func uriParams(uri string) string { return `{"uri":"` + uri + `"}` }

// skills/list merges the groups' skills in pages of page_size, each under
// its group's namespace, the servers' own pages all fetched; a skill the
// group's resources deny-list hides is not listed, and skills/get, the
// reads of its files and of its directory answer as for one that does
// not exist; the files of the others read byte for byte, as their digest
// says.
func TestSkillsListedAndHidden(t *testing.T) {
	t.Parallel()
	h := skillsHub(t)
	c, caps := skillsClient(t, h, "")
	if got := string(jsonrpc.Field(jsonrpc.Field(caps, "extensions"), fakeupstream.SkillsExtension)); got != `{"directoryRead":true}` {
		t.Errorf("the extension declared %q (capabilities %s)", got, caps)
	}
	pages := listSkills(t, c, 1)
	want := [][]string{{"skill://one/pdf/SKILL.md", "skill://one/docs/SKILL.md", "skill://one/xlsx/SKILL.md"}, {"skill://two/pdf/SKILL.md"}}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("skills/list pages %v, want %v", pages, want)
	}

	for i, tc := range []struct{ method, uri, code string }{
		{"skills/get", "skill://one/secret/SKILL.md", "-32602"},
		{"resources/read", "skill://one/secret/SKILL.md", "-32002"},
		{"resources/read", "skill://one/secret/ref/GUIDE.md", "-32002"},
		{"resources/directory/read", "skill://one/secret", "-32602"},
		{"skills/get", "skill://secret/SKILL.md", "-32602"}, // the server's own URI is none of the hub's
	} {
		got := c.request(20+i, tc.method, uriParams(tc.uri))
		if !strings.Contains(got, `"code":`+tc.code) || strings.Contains(got, "Use secret") {
			t.Errorf("%s %s of a hidden skill: %s, want %s", tc.method, tc.uri, got, tc.code)
		}
	}

	got := c.request(30, "skills/get", uriParams("skill://one/pdf/SKILL.md"))
	if !strings.Contains(got, `"uri":"skill://one/pdf/ref/GUIDE.md"`) || strings.Contains(got, `"skill://pdf/`) {
		t.Errorf("skills/get of pdf: %s", got)
	}
	guide := fakeupstream.SkillFiles("one", "pdf")[1][1]
	if !strings.Contains(got, `"digest":"`+fakeupstream.SkillDigest(guide)+`"`) {
		t.Errorf("skills/get of pdf does not carry the server's digest of its guide: %s", got)
	}
	var read struct {
		Contents []struct{ URI, Text string } `json:"contents"`
	}
	mustJSON(t, string(resultOf(t, c.request(31, "resources/read", uriParams("skill://one/pdf/ref/GUIDE.md")))), &read)
	if len(read.Contents) != 1 || read.Contents[0].URI != "skill://one/pdf/ref/GUIDE.md" || read.Contents[0].Text != guide {
		t.Errorf("read of pdf's guide: %+v, want %q", read, guide)
	}
	dir := c.request(32, "resources/directory/read", uriParams("skill://one/pdf"))
	if !strings.Contains(dir, `"uri":"skill://one/pdf/SKILL.md"`) || !strings.Contains(dir, `"uri":"skill://one/pdf/ref"`) {
		t.Errorf("directory of pdf: %s", dir)
	}
}

// A profile without a group sees none of its skills: not listed, not got,
// not read; a view with no skills server, once its servers are up, is
// offered no extension.
func TestSkillsPerProfile(t *testing.T) {
	t.Parallel()
	h := skillsHub(t)
	c, caps := skillsClient(t, h, "one")
	if pages := listSkills(t, c, 1); !slices.Equal(pages[0], []string{"skill://one/pdf/SKILL.md", "skill://one/docs/SKILL.md", "skill://one/xlsx/SKILL.md"}) || len(pages) != 1 {
		t.Errorf("profile one lists %v", pages)
	}
	if jsonrpc.Field(jsonrpc.Field(caps, "extensions"), fakeupstream.SkillsExtension) == nil {
		t.Errorf("profile one is not offered the extension: %s", caps)
	}
	if got := c.request(10, "skills/get", uriParams("skill://two/pdf/SKILL.md")); !strings.Contains(got, `"code":-32602`) {
		t.Errorf("profile one gets two's pdf: %s", got)
	}
	if got := c.request(11, "resources/read", uriParams("skill://two/pdf/ref/GUIDE.md")); !strings.Contains(got, `"code":-32002`) {
		t.Errorf("profile one reads two's pdf guide: %s", got)
	}

	plain, caps := skillsClient(t, h, "plain")
	if ext := jsonrpc.Field(caps, "extensions"); ext != nil {
		t.Errorf("profile plain declares extensions %s, want none", ext)
	}
	if pages := listSkills(t, plain, 1); len(pages) != 1 || len(pages[0]) != 0 {
		t.Errorf("profile plain lists %v", pages)
	}
	if got := plain.request(10, "skills/get", uriParams("skill://one/pdf/SKILL.md")); !strings.Contains(got, `"code":-32602`) {
		t.Errorf("profile plain gets one's pdf: %s", got)
	}
}

// A policy rule with uri: denies the read of a skill's file as of any
// resource (-32001, with the rule's description), and leaves the skill's
// other files and the skill itself alone.
func TestSkillsPolicyURI(t *testing.T) {
	t.Parallel()
	h := skillsHub(t)
	c, _ := skillsClient(t, h, "")
	if got := c.request(1, "resources/read", uriParams("skill://one/docs/ref/GUIDE.md")); !strings.Contains(got, `"code":-32001`) ||
		!strings.Contains(got, "no guides of docs") || strings.Contains(got, "How to use") {
		t.Errorf("a read the policy denies: %s", got)
	}
	if got := c.request(2, "resources/read", uriParams("skill://one/docs/SKILL.md")); !strings.Contains(got, "Use docs.") {
		t.Errorf("docs' SKILL.md, which no rule denies: %s", got)
	}
	if got := c.request(3, "skills/get", uriParams("skill://one/docs/SKILL.md")); !strings.Contains(got, `"skill"`) {
		t.Errorf("skills/get of docs: %s", got)
	}
}

// Two servers of one group that serve the same skill collide: the first
// in config order keeps it, and the hub's problems say which is hidden.
func TestSkillsCollisionReported(t *testing.T) {
	t.Parallel()
	h := skillsHub(t)
	want := `skill "skill://two/pdf/SKILL.md" of two/y is hidden: two/x lists the same URI`
	if !slices.ContainsFunc(h.Problems(), func(p string) bool { return strings.HasPrefix(p, want) }) {
		t.Errorf("problems %q lack %q", h.Problems(), want)
	}
	c, _ := skillsClient(t, h, "")
	var read struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	mustJSON(t, string(resultOf(t, c.request(1, "resources/read", uriParams("skill://two/pdf/ref/GUIDE.md")))), &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != fakeupstream.SkillFiles("x", "pdf")[1][1] {
		t.Errorf("two's pdf guide read %+v, want x's", read)
	}
}
