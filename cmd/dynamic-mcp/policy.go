package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// fixture is one policy test case: an MCP request (tools/call,
// resources/read or prompts/get), the group it is for, and what the policy
// should decide. Optional: resourceName, the name a resources/read's
// resource is listed under (a group may hide it by name), and inputSchema,
// the tool's input schema as its server lists it, against which the rules
// on the tool's arguments are checked (policy test has no upstream to ask).
type fixture struct {
	Method string `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
	Group        string          `json:"group"`
	Server       string          `json:"server"`
	Expected     string          `json:"expected"`
	ResourceName string          `json:"resourceName"`
	InputSchema  json.RawMessage `json:"inputSchema"`
}

// errMismatch makes policy test exit 1 when a decision differs from what a
// fixture expects.
var errMismatch = errors.New("a decision differs from what its fixture expects")

// policyCmd evaluates fixtures against a config's policy without starting
// any upstream, for a user's CI. It decides with policy.Decide, as the hub
// does. A rule naming an argument a fixture's inputSchema does not have is
// a warning on stderr, not a failure.
func policyCmd(args []string, stdout, stderr io.Writer) error {
	const usageText = "usage: dynamic-mcp policy test -c FILE --fixture F | --fixture-dir D [--expect allow|deny|log|prompt]"
	if len(args) == 0 || args[0] != "test" {
		return helpOrUsage(args, stdout, usageText)
	}
	var c common
	var fixtureFile, fixtureDir, expect string
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&fixtureFile, "fixture", "", "one fixture `file` (JSON)")
	fs.StringVar(&fixtureDir, "fixture-dir", "", "a `directory` of fixtures (*.json)")
	fs.StringVar(&expect, "expect", "", "expect this `decision` of every fixture: allow, deny, log or prompt")
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	switch expect {
	case "", "allow", "deny", "log", "prompt":
	default:
		return usageError{fmt.Sprintf("--expect %q: use allow, deny, log or prompt", expect)}
	}
	if (fixtureFile == "") == (fixtureDir == "") {
		return usageError{"policy test needs one of --fixture FILE or --fixture-dir DIR"}
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	files := []string{fixtureFile}
	if fixtureDir != "" {
		if files, err = filepath.Glob(filepath.Join(fixtureDir, "*.json")); err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no *.json fixtures in %s", fixtureDir)
		}
		sort.Strings(files)
	}
	p := policy.New(cfg)
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIXTURE\tGROUP\tMETHOD\tTARGET\tDECISION\tRULE\tEXPECTED\tRESULT")
	failed := 0
	for _, path := range files {
		var f fixture
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil {
			return fmt.Errorf("fixture %s: %w", path, err)
		}
		group, target, err := f.resolve(cfg)
		if err != nil {
			return fmt.Errorf("fixture %s: %w", path, err)
		}
		d := decideFixture(p, group, f, target)
		if f.Method == policy.MethodToolsCall && len(f.InputSchema) > 0 {
			for _, w := range p.UnknownArgs(group.Name, fixtureServer(group, f), target, f.InputSchema) {
				fmt.Fprintf(stderr, "warning: %s: %s\n", filepath.Base(path), w)
			}
		}
		want := f.Expected
		if expect != "" {
			want = expect
		}
		result := "-"
		switch {
		case want == "":
		case want == string(d.Action):
			result = "pass"
		default:
			result = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", filepath.Base(path), group.Name, f.Method, target, d.Action, orDash(d.Rule), orDash(want), result)
	}
	w.Flush()
	if failed > 0 {
		return fmt.Errorf("%d of %d fixtures: %w", failed, len(files), errMismatch)
	}
	return nil
}

// resolve finds the fixture's group and target. The group may be given,
// be the prefix of a flat-mode tool name (files__read_file), or be the
// config's only group.
func (f *fixture) resolve(cfg *config.Config) (*config.Group, string, error) {
	target := f.Params.Name
	if f.Method == policy.MethodResourcesRead {
		target = f.Params.URI
	}
	switch f.Method {
	case policy.MethodToolsCall, policy.MethodResourcesRead, policy.MethodPromptsGet:
	default:
		return nil, "", fmt.Errorf("method %q: a fixture is a tools/call, resources/read or prompts/get", f.Method)
	}
	if target == "" {
		return nil, "", errors.New("no params.name (or params.uri for resources/read)")
	}
	find := func(name string) *config.Group {
		for _, g := range cfg.Groups {
			if g.Name == name {
				return g
			}
		}
		return nil
	}
	if f.Group != "" {
		if g := find(f.Group); g != nil {
			return g, target, nil
		}
		return nil, "", noGroup(cfg, f.Group)
	}
	if prefix, rest, ok := strings.Cut(target, "__"); ok && f.Method != policy.MethodResourcesRead {
		if g := find(prefix); g != nil {
			return g, rest, nil
		}
	}
	if len(cfg.Groups) == 1 {
		return cfg.Groups[0], target, nil
	}
	return nil, "", errors.New("say which group: add \"group\" to the fixture")
}

// decideFixture is what the hub would decide, by the same function: a
// name the group's deny- or allow-list hides is refused as if absent, then
// the policy rules apply.
func decideFixture(p *policy.Policy, g *config.Group, f fixture, target string) policy.Decision {
	return p.Decide(policy.Request{Group: g.Name, Server: fixtureServer(g, f), Method: f.Method, Name: target,
		Args: f.Params.Arguments, ResourceName: f.ResourceName})
}

// fixtureServer is the server a fixture names, else the group's first.
func fixtureServer(g *config.Group, f fixture) string {
	if f.Server != "" {
		return f.Server
	}
	return g.Servers[0].Name
}
