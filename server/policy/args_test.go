package policy

import (
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The spellings of issue 13 that walked around an args rule: each is
// decided as the spelling the rule names.
func TestArgumentSpellings(t *testing.T) {
	p := New(&config.Config{Groups: []*config.Group{{Name: "files", Policy: []config.Rule{
		{Name: "no-secret", Action: config.ActionDeny, Tool: "read_*", Args: map[string]string{"path": "**/secret*"}},
		{Name: "no-etc", Action: config.ActionDeny, Tool: "read_*", Args: map[string]string{"path": "/etc/**"}},
		{Name: "no-text", Action: config.ActionDeny, Tool: "echo", Args: map[string]string{"text": "forbidden*"}},
		{Name: "anywhere", Action: config.ActionDeny, Tool: "*", Args: map[string]string{AnyArg: "**/.ssh/**"}},
		{Name: "nested", Action: config.ActionDeny, Tool: "search", Args: map[string]string{"opts.scope": "global"}},
		{Name: "project", Action: config.ActionAllow, Tool: "write_file", Args: map[string]string{"path": "/home/me/project/**"}},
		{Name: "no-writes", Action: config.ActionDeny, Tool: "write_file"},
	}}}})
	for _, tc := range []struct {
		name, tool, args string
		rule             string // "" for allowed by default
	}{
		{"absolute", "read_text_file", `{"path":"/srv/data/secret.txt"}`, "no-secret"},
		{"relative", "read_text_file", `{"path":"secret.txt"}`, "no-secret"},
		{"dot relative", "read_text_file", `{"path":"./secret.txt"}`, "no-secret"},
		{"trailing slash", "read_text_file", `{"path":"/srv/data/secret.txt/"}`, "no-secret"},
		{"trailing dot", "read_text_file", `{"path":"/srv/data/secret.txt/."}`, "no-secret"},
		{"dot dot", "read_text_file", `{"path":"/srv/data/x/../secret.txt"}`, "no-secret"},
		{"double slash", "read_text_file", `{"path":"/srv//data/secret.txt"}`, "no-secret"},
		{"file URL", "read_text_file", `{"path":"file:///srv/data/secret.txt/."}`, "no-secret"},
		{"relative into etc", "read_text_file", `{"path":"../../etc/passwd"}`, "no-etc"},
		{"relative below etc", "read_text_file", `{"path":"etc/passwd"}`, "no-etc"},
		{"walked into etc", "read_text_file", `{"path":"/home/me/../../etc/passwd"}`, "no-etc"},
		{"key as is", "echo", `{"text":"forbidden word"}`, "no-text"},
		{"key TEXT", "echo", `{"TEXT":"forbidden word"}`, "no-text"},
		{"key Text", "echo", `{"Text":"forbidden word"}`, "no-text"},
		{"both keys, one bad", "echo", `{"text":"fine","tExt":"forbidden"}`, "no-text"},
		{"nested key case", "search", `{"OPTS":{"Scope":"global"}}`, "nested"},
		{"nested in a list", "search", `{"opts":[{"scope":"local"},{"scope":"global"}]}`, "nested"},
		{"read_multiple_files by path rule", "read_multiple_files", `{"paths":["/srv/a","secret.txt"]}`, ""},
		{"read_multiple_files by any-argument rule", "read_multiple_files", `{"paths":["/srv/a","/home/me/.ssh/id_rsa"]}`, "anywhere"},
		{"any argument, deep", "run", `{"a":{"b":[1,{"c":"/home/me/.ssh/"}]}}`, "anywhere"},
		{"any argument, relative", "run", `{"a":[".ssh/id_rsa"]}`, "anywhere"},
		{"fine", "read_text_file", `{"path":"/srv/data/notes.txt"}`, ""},
		{"allow inside", "write_file", `{"path":"/home/me/project/a.txt"}`, "project"},
		{"allow is not walked out of", "write_file", `{"path":"/home/me/project/../.bashrc"}`, "no-writes"},
		{"allow is not given a relative path", "write_file", `{"path":"a.txt"}`, "no-writes"},
		{"allow with a second key in other case", "write_file", `{"path":"/home/me/project/a","PATH":"/etc/x"}`, "no-writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Evaluate(Request{Group: "files", Method: MethodToolsCall, Name: tc.tool, Args: json.RawMessage(tc.args)})
			want := config.ActionAllow
			if tc.rule != "" && tc.rule != "project" {
				want = config.ActionDeny
			}
			if d.Rule != tc.rule || d.Action != want {
				t.Errorf("got %s by %q, want %s by %q", d.Action, d.Rule, want, tc.rule)
			}
		})
	}
}

// deniedPaths are the rules of the differential fuzz test.
var deniedPaths = []string{"**/secret*", "/etc/**", "/home/*/.ssh/**", "/srv/data/private", "**/.env"}

// roots are directories an upstream may resolve a relative path against.
var roots = []string{"/", "/srv/data", "/home/me", "/home/me/project/sub"}

// Any value that cleans, as given or resolved against a root, to a path a
// deny rule matches is denied, whatever its spelling.
func FuzzCleanedPathDenied(f *testing.F) {
	for _, s := range []string{"secret.txt", "/srv/data/secret.txt/.", "../../etc/passwd", ".ssh/id_rsa", "/srv/data/private/", "a/../.env", "x//y/./secret"} {
		f.Add(s)
	}
	cfg := &config.Config{Groups: []*config.Group{{Name: "g"}}}
	for i, g := range deniedPaths {
		cfg.Groups[0].Policy = append(cfg.Groups[0].Policy, config.Rule{Name: g, Action: config.ActionDeny, Tool: "*", Args: map[string]string{"path": g}})
		cfg.Groups[0].Policy = append(cfg.Groups[0].Policy, config.Rule{Name: "any" + g, Action: config.ActionDeny, Tool: "*", Args: map[string]string{AnyArg: deniedPaths[len(deniedPaths)-1-i]}})
	}
	p := New(cfg)
	f.Fuzz(func(t *testing.T, v string) {
		if v == "" {
			return
		}
		var resolved []string
		if strings.HasPrefix(v, "/") {
			resolved = []string{path.Clean(v)}
		} else {
			for _, r := range roots {
				resolved = append(resolved, path.Clean(r+"/"+v))
			}
		}
		var denied string
		for _, c := range resolved {
			for _, g := range deniedPaths {
				if glob, _ := CompileGlob(g); glob.Match(c) {
					denied = c
				}
			}
		}
		if denied == "" {
			return
		}
		val, _ := json.Marshal(v)
		for _, args := range []string{`{"path":` + string(val) + `}`, `{"PATH":[` + string(val) + `]}`, `{"x":{"y":[` + string(val) + `]}}`} {
			if d := p.Evaluate(Request{Group: "g", Method: MethodToolsCall, Name: "t", Args: json.RawMessage(args)}); d.Action != config.ActionDeny {
				t.Fatalf("%s resolves to %q, which a rule denies, but was %s", args, denied, d.Action)
			}
		}
	})
}
