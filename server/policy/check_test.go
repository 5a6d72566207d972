package policy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A rule naming an argument the tool does not take is reported with the
// names it does take; one the tool has, in any case, is not.
func TestUnknownArgs(t *testing.T) {
	p := New(&config.Config{Groups: []*config.Group{{Name: "files", Policy: []config.Rule{
		{Name: "no-secret", Action: config.ActionDeny, Tool: "read_*", Args: map[string]string{"path": "**/secret*"}},
		{Name: "nested", Action: config.ActionDeny, Tool: "search", Args: map[string]string{"opts.Scope": "x", "opts.depth": "1"}},
		{Name: "any", Action: config.ActionDeny, Tool: "read_*", Args: map[string]string{AnyArg: "**/x"}},
		{Name: "every-tool", Action: config.ActionDeny, Tool: "*", Args: map[string]string{"path": "**/x"}},
		{Name: "other-server", Action: config.ActionDeny, Tool: "read_*", Server: "other", Args: map[string]string{"nope": "x"}},
	}}}})
	for _, tc := range []struct {
		tool, schema string
		want         []string
	}{
		{"read_text_file", `{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"}}}`, nil},
		{"read_text_file", `{"type":"object","properties":{"PATH":{"type":"string"}}}`, nil},
		{"read_multiple_files", `{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}}}`,
			[]string{`policy rule no-secret names argument "path", which tool read_multiple_files of files/fs does not have (its arguments: paths)`}},
		{"read_nothing", `{"type":"object"}`, []string{`policy rule no-secret names argument "path", which tool read_nothing of files/fs does not have (its arguments: none)`}},
		{"read_any", `{}`, nil},
		{"search", `{"type":"object","properties":{"opts":{"type":"object","properties":{"scope":{},"limit":{}}}}}`,
			[]string{`policy rule nested names argument "opts.depth", which tool search of files/fs does not have (its arguments: limit, scope)`}},
		{"search", `{"type":"object","properties":{"opts":{"type":"array","items":{"type":"object","properties":{"scope":{},"depth":{}}}}}}`, nil},
	} {
		got := p.UnknownArgs("files", "fs", tc.tool, json.RawMessage(tc.schema))
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s %s:\n got %q\nwant %q", tc.tool, tc.schema, got, tc.want)
		}
	}
}

// Decide hides as the hub's view does, a resource by URI or name, before
// the rules apply.
func TestDecide(t *testing.T) {
	re := func(s string) []*regexp.Regexp { return []*regexp.Regexp{regexp.MustCompile(s)} }
	g := &config.Group{Name: "g", Tools: config.Filter{Deny: re("^write_")}, Resources: config.Filter{Deny: re("^secret$")},
		Prompts: config.Filter{Deny: re("^admin")}, Policy: []config.Rule{{Name: "all", Action: config.ActionLog}}}
	p := New(&config.Config{Groups: []*config.Group{g}})
	for _, tc := range []struct {
		req  Request
		rule string
	}{
		{Request{Group: "g", Method: MethodToolsCall, Name: "write_file"}, RuleHidden},
		{Request{Group: "g", Method: MethodToolsCall, Name: "read_file"}, "all"},
		{Request{Group: "g", Method: MethodPromptsGet, Name: "admin-reset"}, RuleHidden},
		{Request{Group: "g", Method: MethodResourcesRead, Name: "fake://x/1", ResourceName: "secret"}, RuleHidden},
		{Request{Group: "g", Method: MethodResourcesRead, Name: "fake://x/1"}, "all"},
	} {
		if d := p.Decide(tc.req); d.Rule != tc.rule {
			t.Errorf("%+v: %+v, want rule %s", tc.req, d, tc.rule)
		}
	}
}
