package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// The built hub in front of the everything reference server, with
// max_result: 20KB: get-env's answer of some 300 KB (the environment the
// server inherits, three variables of 100 KB) comes under 20 KB with a
// link, and the link's pages give back the whole result, every variable
// exactly.
func TestMaxResultEverythingServer(t *testing.T) {
	t.Parallel() // its hub is its own
	var env []string
	want := map[string]string{}
	for i := 1; i <= 3; i++ {
		var b strings.Builder
		for j := 0; b.Len() < 100000; j++ {
			fmt.Fprintf(&b, "%d:%d \"naïve\" 日本 🙂 \\ ", i, j)
		}
		name := fmt.Sprintf("DYNAMIC_TEST_BIG%d", i)
		want[name] = b.String()
		env = append(env, name+"="+b.String())
	}
	c := startHubEnv(t, env, fmt.Sprintf("mode: flat\nsettings: {shared: \"off\", max_result: 20KB, "+nodeWaits+"}\ngroups:\n  ev: {description: The reference server, command: node, args: %s}\n",
		yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	c.initialize("2025-11-25")
	await.Costly(t, 30*time.Second, "the everything server's get-env", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), `"ev__get-env"`)
	})
	res := c.call("tools/call", map[string]any{"name": "ev__get-env", "arguments": map[string]any{}})
	if len(res) >= 20000 {
		t.Fatalf("the answer takes %d bytes", len(res))
	}
	var cut struct {
		Content []struct{ Type, Text, URI string }
	}
	mustUnmarshal(t, res, &cut)
	var link string
	for _, b := range cut.Content {
		if b.Type == "resource_link" && strings.HasPrefix(b.URI, "dynamic-mcp://results/") {
			link = b.URI
		}
	}
	if link == "" || !strings.Contains(string(res), "bytes cut here") {
		t.Fatalf("no link, or no cut text: %s", res)
	}
	var whole strings.Builder
	for p, pages := 1, 1; p <= pages; p++ {
		page := c.call("resources/read", map[string]any{"uri": fmt.Sprintf("%s?page=%d", link, p)})
		if len(page) >= 20000 {
			t.Errorf("page %d takes %d bytes", p, len(page))
		}
		var r struct {
			Contents []struct{ Text string }
			Meta     struct {
				Pages int `json:"dynamic-mcp/pages"`
			} `json:"_meta"`
		}
		mustUnmarshal(t, page, &r)
		whole.WriteString(r.Contents[0].Text)
		pages = r.Meta.Pages
	}
	var result struct {
		Content []struct{ Text string }
	}
	mustUnmarshal(t, []byte(whole.String()), &result)
	var got map[string]string
	mustUnmarshal(t, []byte(result.Content[0].Text), &got)
	for name, value := range want {
		if got[name] != value {
			t.Errorf("%s: %d bytes, want %d", name, len(got[name]), len(value))
		}
	}
}
