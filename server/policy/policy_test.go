package policy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		glob, in string
		want     bool
	}{
		{"read_*", "read_file", true},
		{"read_*", "read_dir/x", false},
		{"/home/*/x", "/home/ann/x", true},
		{"/home/*/x", "/home/ann/b/x", false},
		{"/home/**", "/home/ann/b/x", true},
		{"/home/**/x", "/home/ann/b/x", true},
		{"/home/**/x", "/home/x", true}, // **/ is zero or more directories
		{"**/secret*", "secret.txt", true},
		{"**/secret*", "/a/b/secret.txt", true},
		{"file://**", "file:///etc/passwd", true},
		{"file://**", "https://x", false},
		{"?.txt", "a.txt", true},
		{"?.txt", "ab.txt", false},
		{"a.b", "axb", false},
		{"{a,b}.txt", "b.txt", true},
		{"[ab].txt", "b.txt", true},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"é*", "été", true},
		{"line*", "line1\nline2", true},
	} {
		g, err := CompileGlob(tc.glob)
		if err != nil {
			t.Fatalf("CompileGlob(%q): %v", tc.glob, err)
		}
		if got := g.Match(tc.in); got != tc.want {
			t.Errorf("Glob(%q).Match(%q) = %v, want %v", tc.glob, tc.in, got, tc.want)
		}
	}
	if _, err := CompileGlob("a["); err == nil {
		t.Error("a[ compiled")
	}
}

func FuzzGlob(f *testing.F) {
	for _, s := range []string{"*", "**", "?", "a*b?c**", `\.[]()`, "é?", "{a,b", "**/x"} {
		f.Add(s, "abc")
	}
	f.Fuzz(func(t *testing.T, glob, in string) {
		g, err := CompileGlob(glob)
		if err != nil {
			return
		}
		g.Match(in) // must not panic
		g.MatchAny(in)
		g.MatchAll(in)
		if !strings.ContainsAny(glob, `*?[]{}\`) && utf8.ValidString(glob) && utf8.ValidString(in) && g.Match(in) != (glob == in) {
			t.Fatalf("literal glob %q vs %q", glob, in)
		}
		if all, _ := CompileGlob("**"); !all.Match(in) {
			t.Fatalf("** did not match %q", in)
		}
		if g.MatchAll(in) && !g.MatchAny(in) {
			t.Fatalf("%q: MatchAll but not MatchAny %q", glob, in)
		}
	})
}

func TestEvaluate(t *testing.T) {
	cfg := &config.Config{
		PolicyDefault: config.ActionAllow,
		Groups: []*config.Group{{Name: "files", Policy: []config.Rule{
			{Name: "no-ssh", Action: config.ActionDeny, Tool: "read_*", Args: map[string]string{"path": "**/.ssh/**"}, Description: "no SSH keys"},
			{Name: "projects", Action: config.ActionAllow, Tool: "read_multiple_files", Args: map[string]string{"paths": "/home/me/project/**"}},
			{Name: "ask-writes", Action: config.ActionPrompt, Tool: "write_*"},
			{Name: "nested", Action: config.ActionDeny, Tool: "search", Args: map[string]string{"opts.scope": "global"}},
			{Name: "backup-only", Action: config.ActionDeny, Tool: "*", Server: "backup"},
			{Name: "env-uri", Action: config.ActionDeny, URI: "file:///etc/**"},
			{Name: "admin-prompt", Action: config.ActionLog, Prompt: "admin-*"},
		}}},
		Policy: []config.Rule{
			{Name: "global-no-delete", Action: config.ActionDeny, Tool: "delete_*", Description: "nothing is deleted"},
		},
	}
	p := New(cfg)
	call := func(tool, args string) Request {
		return Request{Group: "files", Server: "fs", Method: MethodToolsCall, Name: tool, Args: json.RawMessage(args)}
	}
	for _, tc := range []struct {
		name string
		req  Request
		want config.Action
		rule string
	}{
		{"glob on argument", call("read_file", `{"path":"/home/me/.ssh/id_rsa"}`), config.ActionDeny, "no-ssh"},
		{"argument does not match", call("read_file", `{"path":"/home/me/notes"}`), config.ActionAllow, ""},
		{"argument missing", call("read_file", `{}`), config.ActionAllow, ""},
		{"allow rule needs every element", call("read_multiple_files", `{"paths":["/home/me/project/a","/etc/passwd"]}`), config.ActionAllow, ""},
		{"allow rule with all elements", call("read_multiple_files", `{"paths":["/home/me/project/a","/home/me/project/b"]}`), config.ActionAllow, "projects"},
		{"deny rule on any element", call("read_file", `{"path":["/x","/home/me/.ssh/k"]}`), config.ActionDeny, "no-ssh"},
		{"first match wins", call("write_file", `{"path":"/home/me/.ssh/k"}`), config.ActionPrompt, "ask-writes"},
		{"nested argument", call("search", `{"opts":{"scope":"global"}}`), config.ActionDeny, "nested"},
		{"nested argument other value", call("search", `{"opts":{"scope":"local"}}`), config.ActionAllow, ""},
		{"number argument", Request{Group: "g", Method: MethodToolsCall, Name: "x", Args: json.RawMessage(`{"n":5}`)}, config.ActionAllow, ""},
		{"server limits a rule", Request{Group: "files", Server: "backup", Method: MethodToolsCall, Name: "anything"}, config.ActionDeny, "backup-only"},
		{"global rules after the group's", call("delete_file", `{}`), config.ActionDeny, "global-no-delete"},
		{"global rules apply to other groups", Request{Group: "web", Method: MethodToolsCall, Name: "delete_page"}, config.ActionDeny, "global-no-delete"},
		{"uri rule", Request{Group: "files", Method: MethodResourcesRead, Name: "file:///etc/passwd"}, config.ActionDeny, "env-uri"},
		{"uri rule does not apply to tools", call("file:///etc/passwd", `{}`), config.ActionAllow, ""},
		{"prompt rule", Request{Group: "files", Method: MethodPromptsGet, Name: "admin-reset"}, config.ActionLog, "admin-prompt"},
		{"fail closed on bad arguments", call("read_file", `{"path":`), config.ActionDeny, ""},
		{"fail closed on bad arguments no rule reads", call("write_file", `{"path":`), config.ActionDeny, ""},
		{"what follows the arguments' value is not read", call("write_file", `{} x`), config.ActionPrompt, "ask-writes"},
		{"fail closed when a path crosses a non-object", call("search", `{"opts":"flat"}`), config.ActionDeny, "nested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Evaluate(tc.req)
			if d.Action != tc.want || d.Rule != tc.rule {
				t.Errorf("got %+v, want %s by %q", d, tc.want, tc.rule)
			}
		})
	}
	cfg.PolicyDefault = config.ActionDeny
	if d := New(cfg).Evaluate(call("list", `{}`)); d.Action != config.ActionDeny || d.Rule != "" {
		t.Errorf("policy_default deny: %+v", d)
	}
	if d := New(&config.Config{Policy: []config.Rule{{Name: "all", Action: config.ActionLog}}}).Evaluate(Request{Method: MethodPromptsGet, Name: "p"}); d.Rule != "all" {
		t.Errorf("a rule with no target applies to everything: %+v", d)
	}
}

// Limits says whether any rule, a group's or a global one, has a rate:
// the hub leaves the rate limit out of a chain whose policy has none.
func TestLimits(t *testing.T) {
	rate := &config.RateLimit{}
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		want bool
	}{
		{"no rules", &config.Config{Groups: []*config.Group{{Name: "g"}}}, false},
		{"rules without a rate", &config.Config{Groups: []*config.Group{{Name: "g", Policy: []config.Rule{{Name: "r", Action: config.ActionDeny}}}}}, false},
		{"a group's rule", &config.Config{Groups: []*config.Group{{Name: "g", Policy: []config.Rule{{Name: "r", Action: config.ActionAllow, Rate: rate}}}}}, true},
		{"a global rule", &config.Config{Policy: []config.Rule{{Name: "r", Action: config.ActionAllow, Rate: rate}}}, true},
	} {
		if got := New(tc.cfg).Limits(); got != tc.want {
			t.Errorf("%s: Limits() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Fixed names the groups whose every call Decide decides alike (no
// filter, no rule of theirs, no global rule), with that decision.
func TestFixed(t *testing.T) {
	deny := []config.Rule{{Name: "r", Action: config.ActionDeny}}
	cfg := &config.Config{PolicyDefault: config.ActionLog, Groups: []*config.Group{
		{Name: "plain"}, {Name: "ruled", Policy: deny}, {Name: "filtered", Tools: config.Filter{Deny: []*regexp.Regexp{regexp.MustCompile("^rm$")}}},
	}}
	fixed := New(cfg).Fixed()
	if len(fixed) != 1 || fixed["plain"] != (Decision{Action: config.ActionLog}) {
		t.Fatalf("Fixed() = %+v, want plain alone, decided log", fixed)
	}
	p := New(cfg)
	for _, req := range []Request{
		{Group: "plain", Method: MethodToolsCall, Name: "rm", Args: json.RawMessage(`{"a":1}`)},
		{Group: "plain", Method: MethodToolsCall, Name: "x", Args: json.RawMessage(`not json`)},
		{Group: "plain", Method: MethodResourcesRead, Name: "file:///etc/passwd"},
	} {
		if got := p.Decide(req); got != fixed["plain"] {
			t.Errorf("Decide(%+v) = %+v, Fixed says %+v", req, got, fixed["plain"])
		}
	}
	cfg.Policy = deny
	if fixed := New(cfg).Fixed(); len(fixed) != 0 {
		t.Errorf("with a global rule, Fixed() = %+v, want none", fixed)
	}
}

// TestEvaluateReadsArgumentsOnlyForArgsRules holds that a call which no
// rule with args reaches is decided without decoding its arguments (a
// decode is about a kilobyte of garbage a call), and that one which such
// a rule reaches is decoded.
func TestEvaluateReadsArgumentsOnlyForArgsRules(t *testing.T) {
	p := New(&config.Config{Groups: []*config.Group{{Name: "g", Policy: []config.Rule{
		{Name: "no-fail", Action: config.ActionDeny, Tool: "fail"},
		{Name: "no-ssh", Action: config.ActionDeny, Tool: "read_*", Args: map[string]string{"path": "**/.ssh/**"}},
		{Name: "rest", Action: config.ActionAllow, Tool: "*"},
	}}}})
	args := json.RawMessage(`{"text":"x","n":[1,2,{"k":"v"}]}`)
	for _, tc := range []struct {
		tool    string
		decodes bool
	}{{"echo", false}, {"fail", false}, {"read_file", true}} {
		allocs := testing.AllocsPerRun(50, func() {
			p.Evaluate(Request{Group: "g", Method: MethodToolsCall, Name: tc.tool, Args: args})
		})
		if decoded := allocs >= 5; decoded != tc.decodes {
			t.Errorf("%s: %v allocations a call; decoded: %v, want %v", tc.tool, allocs, decoded, tc.decodes)
		}
	}
}
