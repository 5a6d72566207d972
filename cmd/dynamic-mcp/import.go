package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// placeholderPrefix starts the description import writes when it has no
// better one; validate warns about it.
const placeholderPrefix = "TODO: describe"

// describeFlags collects --describe name="...".
type describeFlags map[string]string

func (d describeFlags) String() string { return "" }
func (d describeFlags) Set(v string) error {
	name, desc, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=\"description\", got %q", v)
	}
	d[name] = strings.Trim(desc, `"`)
	return nil
}

// importCmd moves a client's MCP servers into the YAML config, one group
// per server, in the client's order.
func importCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var project, out string
	var force, probe, toVault bool
	describe := describeFlags{}
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.StringVar(&project, "project", "", "read the client's project config in `dir`")
	fs.StringVar(&out, "o", defaultConfigPath(), "the YAML config `file` to write or merge into")
	fs.BoolVar(&force, "force", false, "replace groups of the same name already in the config")
	fs.BoolVar(&probe, "probe", false, "start each server to take its description from its instructions or name")
	fs.BoolVar(&toVault, "vault", false, "move literal secrets (env and headers named like one) into the vault, writing ${secret:NAME}")
	fs.Var(describe, "describe", "`name=\"description\"` of a server's group (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: dynamic-mcp import <client|file> [--project DIR] [-o FILE] [--force] [--probe] [--vault] [--describe name=\"...\"]"}
	}
	env := clients.CurrentEnv()
	servers, source, notes, err := readClient(env, pos[0], project)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	servers = withoutHub(servers, stderr)
	if len(servers) == 0 {
		return fmt.Errorf("%s has no MCP servers", source)
	}
	interactive := isTerminal(stdin)
	reader := bufio.NewReader(stdin)
	for i := range servers {
		s := &servers[i]
		switch {
		case describe[s.Name] != "":
			s.Description = describe[s.Name]
		case s.Description != "":
		case probe:
			s.Description = probeDescription(ctx, s, stderr)
		}
		if s.Description == "" && interactive {
			fmt.Fprintf(stderr, "What is %s for? (one line the LLM reads; Enter leaves a TODO that validate flags): ", s.Name)
			line, _ := reader.ReadString('\n')
			s.Description = strings.TrimSpace(line)
		}
		if s.Description == "" {
			s.Description = fmt.Sprintf("%s what %s is for (imported from %s)", placeholderPrefix, s.Name, filepath.Base(source))
		}
	}
	keys, renamed := groupKeys(servers)
	for _, r := range renamed {
		fmt.Fprintln(stderr, "note:", r)
	}
	cfg, err := readConfigDoc(out)
	if err != nil {
		return err
	}
	// A group the merge leaves alone keeps what it has: its server's
	// secrets are not the config's, so they go nowhere.
	kept := func(i int) bool { return force || cfg.group(keys[i]) < 0 }
	if found := literalSecrets(servers, keys, kept); len(found) > 0 && !toVault && interactive {
		more, them := " ...", "them" // more follows the first secret's name when there are others
		if len(found) == 1 {
			more, them = "", "it"
		}
		fmt.Fprintf(stderr, "found %s written literally (%s%s); move %s into the vault? [y/N] ", plural(len(found), "secret"), found[0].key, more, them)
		line, _ := reader.ReadString('\n')
		toVault = strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
	}
	// From here to the write, one import into out at a time: another
	// (a second terminal, a script) that read the config before this one
	// wrote it would write over the groups this one added, or move the
	// secrets of a group it then found there and left alone (into the
	// vault, for nothing). The config is read again under the lock: the
	// questions above may have waited on the user.
	l, err := lockOf(ctx, "import", samePath(out), importLockWait)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("import into %s: %w", out, err)
		}
		return fmt.Errorf("another import into %s is under way: %w", out, err)
	}
	defer l.Unlock()
	if cfg, err = cfg.reread(); err != nil {
		return err
	}
	// What is moved, or written literally, is what the config read under
	// the lock takes (kept reads cfg), not what the first read would have.
	found := literalSecrets(servers, keys, kept)
	if len(found) > 0 && toVault {
		if err := moveSecrets(servers, found, out, stdout); err != nil {
			return err
		}
	}
	added, skipped, backup, err := mergeIntoConfig(cfg, servers, keys, force)
	if err != nil {
		return err
	}
	if len(found) > 0 && !toVault {
		var each []string
		for _, f := range found {
			each = append(each, f.key+" of "+f.server)
		}
		again := make([]string, len(args))
		for i, a := range args {
			again[i] = config.ShellQuote(a)
		}
		fmt.Fprintf(stderr, "note: %s written literally into %s (%s); to keep secrets in the vault instead: dynamic-mcp import %s --vault --force (--force replaces the config's groups of these names)\n",
			plural(len(found), "secret"), out, strings.Join(each, ", "), strings.Join(again, " "))
	}
	fmt.Fprintf(stdout, "%s: %s imported from %s into %s", pos[0], plural(len(added), "server"), source, out)
	if len(renamed) > 0 {
		fmt.Fprintf(stdout, " (%d renamed, as their names make the same group name)", len(renamed))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stdout, " (already there, left alone: %s; --force replaces them)", strings.Join(skipped, ", "))
	}
	fmt.Fprintln(stdout)
	if backup != "" {
		fmt.Fprintf(stdout, "  the file as it was: %s\n", backup)
	}
	printNeeds(out, stdout, stderr)
	return nil
}

// printNeeds lists the variables and secrets the config at path uses and
// are not set, with how to set each: until they are, the groups that use
// them are unavailable.
func printNeeds(path string, stdout, stderr io.Writer) {
	cfg, err := configs.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "note: the hub would not start on %s yet:\n%v\n", path, err)
		return
	}
	if n := needs(cfg); len(n) > 0 {
		fmt.Fprintln(stdout, "set these before the groups that use them can start:")
		for _, line := range n {
			fmt.Fprintln(stdout, "  "+line)
		}
	}
}

// groupKeys names each server's group: its name made a group name, and
// when an earlier server of the same import already has that group name
// ("my server" and "my/server" are both my-server), the name with -2, -3
// ... and a note, so that no server is dropped or silently replaced.
func groupKeys(servers []clients.Server) (keys []string, notes []string) {
	taken := map[string]string{} // group name -> the server that has it
	for _, s := range servers {
		base := groupKey(s.Name)
		key := base
		for n := 2; has(taken, key); n++ {
			suffix := fmt.Sprintf("-%d", n)
			key = base[:min(len(base), maxGroupKey-len(suffix))] + suffix
		}
		if key != base {
			notes = append(notes, fmt.Sprintf("server %q is imported as group %s: group %s is server %q's", s.Name, key, base, taken[base]))
		}
		taken[key] = s.Name
		keys = append(keys, key)
	}
	return keys, notes
}

// readClient reads the servers of a client (by name) or of a file.
func readClient(env clients.Env, name, project string) ([]clients.Server, string, []string, error) {
	c, err := clients.Find(env, name)
	var path string
	switch {
	case err == nil:
		if path, err = c.Path(env, project); err != nil {
			return nil, "", nil, err
		}
	case fileExists(name):
		path = name
	default:
		return nil, "", nil, fmt.Errorf("%w, or a config file's path (no file is at %s)", err, name)
	}
	perProject := c != nil && c.Name == "claude-code" && project != ""
	data, err := clients.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && perProject:
		data = []byte("{}") // the project may keep its servers in ~/.claude.json alone
	case errors.Is(err, os.ErrNotExist) && c != nil:
		// The client's usual place: it may not be installed, or keep its
		// file elsewhere (a portable install, another profile).
		return nil, "", nil, fmt.Errorf("no %s config at %s, where %s keeps it; if yours is elsewhere, import it by its path: dynamic-mcp import FILE", name, path, c.Title)
	case err != nil:
		return nil, "", nil, fmt.Errorf("read %s config: %w", name, err)
	}
	if c == nil {
		c = clients.ForFile(env, path, data)
	}
	servers, notes, err := c.Read(data)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Name == "claude-code" && project == "" {
		notes = append(notes, projectServers(data)...)
	}
	// Claude Code keeps a project's servers in ~/.claude.json too.
	if perProject {
		abs, _ := filepath.Abs(project)
		user, err := clients.ReadFile(filepath.Join(env.Home, ".claude.json"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", nil, err
		}
		if err == nil {
			more, moreNotes, err := clients.ReadAt(user, "projects", abs, "mcpServers")
			if err != nil {
				return nil, "", nil, fmt.Errorf("~/.claude.json: %w", err)
			}
			servers, notes = append(servers, more...), append(notes, moreNotes...)
		}
	}
	return servers, path, notes, nil
}

// projectServers notes the projects of ~/.claude.json (data) that list
// servers of their own: import without --project reads the user's
// servers alone, and would otherwise leave these out unsaid.
func projectServers(data []byte) []string {
	var user struct {
		Projects map[string]struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
	}
	if json.Unmarshal(data, &user) != nil {
		return nil
	}
	var notes []string
	for _, dir := range slices.Sorted(maps.Keys(user.Projects)) {
		if names := slices.Sorted(maps.Keys(user.Projects[dir].MCPServers)); len(names) > 0 {
			notes = append(notes, fmt.Sprintf("project %s has servers of its own, not imported (%s): dynamic-mcp import claude-code --project %s", dir, strings.Join(names, ", "), dir))
		}
	}
	return notes
}

// withoutHub drops the entries that run dynamic-mcp itself (install's
// own, or any other), naming each: imported, the hub would be its own
// client.
func withoutHub(servers []clients.Server, stderr io.Writer) []clients.Server {
	kept := servers[:0]
	for _, s := range servers {
		if s.Command != "" && runsHub(s.Command, s.Args) {
			fmt.Fprintf(stderr, "note: %s runs dynamic-mcp itself, so it is not imported\n", s.Name)
			continue
		}
		kept = append(kept, s)
	}
	return kept
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// probeConnectTimeout, when set, is a probe's connect timeout in place of
// the default (a test shortens it).
var probeConnectTimeout time.Duration

// probeDescription starts a server and describes it by its instructions or
// its name; "" when it cannot be reached.
func probeDescription(ctx context.Context, s *clients.Server, stderr io.Writer) string {
	cfg, err := configs.Parse("probe", strings.NewReader(renderGroups([]clients.Server{{Name: "probe", Command: s.Command, Args: s.Args,
		Env: s.Env, URL: s.URL, Headers: s.Headers, Transport: s.Transport, Description: "probe"}})))
	if err != nil {
		fmt.Fprintf(stderr, "note: cannot probe %s: %v\n", s.Name, err)
		return ""
	}
	if probeConnectTimeout > 0 {
		cfg.Settings.ConnectTimeout = probeConnectTimeout
	}
	// A second try soon, for a slow server's longer one (see settle).
	cfg.Settings.Retry.Attempts = 2
	for _, g := range cfg.Groups {
		for _, srv := range g.Servers {
			srv.Retry.Attempts = 2
		}
	}
	mgr, _, err := connectAll(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) // no store: a probe's config
	if err != nil {
		return ""
	}
	defer mgr.Close()
	settle(ctx, cfg, mgr, stderr, func(*upstream.Server) string { return s.Name })
	st := mgr.Servers()[0].Status()
	if st.State != upstream.StateReady {
		fmt.Fprintf(stderr, "note: could not probe %s: %v\n", s.Name, st.Err)
		return ""
	}
	if line, _, _ := strings.Cut(strings.TrimSpace(st.Instructions), "\n"); line != "" {
		return line
	}
	if st.ServerInfo.Title != "" {
		return st.ServerInfo.Title
	}
	return st.ServerInfo.Name
}

// plural is "1 server", "2 servers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func has(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// maxGroupKey is the longest group name import writes.
const maxGroupKey = 64

// groupName is what a group name may not hold; compiled at first use, not at every start.
var groupName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_.-]+`) })

// renderGroups writes servers as YAML groups (the groups: block).
func renderGroups(servers []clients.Server) string {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	groups := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content, scalar("groups"), groups)
	for _, s := range servers {
		groups.Content = append(groups.Content, scalar(groupKey(s.Name)), groupNode(s))
	}
	b, _ := yaml.Marshal(doc)
	return string(b)
}

func groupKey(name string) string {
	k := strings.Trim(groupName().ReplaceAllString(name, "-"), "-")
	if k == "" {
		k = "server"
	}
	if len(k) > maxGroupKey {
		k = k[:maxGroupKey]
	}
	return k
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func groupNode(s clients.Server) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) { n.Content = append(n.Content, scalar(k), v) }
	list := func(items []string) *yaml.Node {
		l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, it := range items {
			l.Content = append(l.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: it, Style: yaml.DoubleQuotedStyle})
		}
		return l
	}
	dict := func(m map[string]string) *yaml.Node {
		d := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range sortedKeys(m) {
			d.Content = append(d.Content, scalar(k), &yaml.Node{Kind: yaml.ScalarNode, Value: m[k], Style: yaml.DoubleQuotedStyle})
		}
		return d
	}
	add("description", scalar(strings.ReplaceAll(s.Description, "$", "$$"))) // literal, never a ${VAR}
	if s.Command != "" {
		add("command", scalar(s.Command))
		if len(s.Args) > 0 {
			add("args", list(s.Args))
		}
		if len(s.Env) > 0 {
			add("env", dict(s.Env))
		}
		if s.Cwd != "" {
			add("cwd", scalar(s.Cwd))
		}
	} else {
		add("url", scalar(s.URL))
		if s.Transport != "" {
			add("transport", scalar(s.Transport))
		}
		if len(s.Headers) > 0 {
			add("headers", dict(s.Headers))
		}
	}
	if len(s.Deny) > 0 {
		add("deny", list(s.Deny))
	}
	if len(s.Allow) > 0 {
		add("allow", list(s.Allow))
	}
	if s.Disabled {
		add("disabled", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	return n
}

// importLockWait bounds how long an import waits for another into the
// same config, which reads and writes a few small files; tests shorten it.
var importLockWait = 30 * time.Second

// samePath is path as every spelling of it names it: absolute, its links
// followed (a config reached through a link, or by ./ and ../, is one
// file, with one lock).
func samePath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if target, err := atomicfile.Target(path); err == nil { // a link to a config not written yet, too
		path = target
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(dir, filepath.Base(path))
	}
	return path
}

// configDoc is the YAML config import merges into, as read.
type configDoc struct {
	path   string
	old    []byte     // the file as it was; nil when there was none
	doc    yaml.Node  // old parsed, or a new config's start
	groups *yaml.Node // doc's groups: map
}

// readConfigDoc reads the YAML config at path for mergeIntoConfig; a
// missing file is a new config.
func readConfigDoc(path string) (*configDoc, error) {
	c := &configDoc{path: path}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = nil
	case err != nil:
		return nil, err
	}
	c.old = old
	if len(old) > 0 {
		if err := yaml.Unmarshal(old, &c.doc); err != nil {
			return nil, fmt.Errorf("%s is not YAML, so nothing was written: %w", path, err)
		}
	}
	if len(c.doc.Content) == 0 {
		// A new config is in mode: auto (flat for a client that searches
		// tools itself, dynamic for the rest); a config import adds to
		// keeps its mode, or its lack of one (dynamic).
		mode := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("mode"), scalar(string(config.ModeAuto))}}
		c.doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mode}}
	}
	root := c.doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a dynamic-mcp config (its top level is not a map)", path)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "groups" {
			c.groups = root.Content[i+1]
		}
	}
	if c.groups == nil || c.groups.Kind != yaml.MappingNode {
		c.groups = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, scalar("groups"), c.groups)
	}
	return c, nil
}

// reread is c, or the config read again when its file is no longer
// what c read.
func (c *configDoc) reread() (*configDoc, error) {
	now, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		now, err = nil, nil
	}
	if err == nil && bytes.Equal(now, c.old) {
		return c, nil
	}
	return readConfigDoc(c.path)
}

// group is where group key's name is in c.groups' Content, or -1.
func (c *configDoc) group(key string) int {
	at := -1
	for i := 0; i+1 < len(c.groups.Content); i += 2 {
		if c.groups.Content[i].Value == key {
			at = i
		}
	}
	return at
}

// mergeIntoConfig adds servers as groups named keys to the YAML config c
// (readConfigDoc; read again if its file changed since), creating its
// file if needed, after a backup of the file it changes. A group already
// in the file is left alone (skipped), or replaced with force.
func mergeIntoConfig(c *configDoc, servers []clients.Server, keys []string, force bool) (added, skipped []string, backup string, err error) {
	// Import may have asked at the terminal since it read the file: a
	// change made meanwhile is merged into, not written over.
	if c, err = c.reread(); err != nil {
		return nil, nil, "", err
	}
	path, old, doc, groups := c.path, c.old, &c.doc, c.groups
	for i, s := range servers {
		key := keys[i]
		at := c.group(key)
		switch {
		case at >= 0 && !force:
			skipped = append(skipped, key)
		case at >= 0:
			groups.Content[at+1] = groupNode(s)
			added = append(added, key)
		default:
			groups.Content = append(groups.Content, scalar(key), groupNode(s))
			added = append(added, key)
		}
	}
	if len(added) == 0 {
		return added, skipped, "", nil // nothing changed: no write, no backup
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, nil, "", err
	}
	out := []byte(b.String())
	if bytes.Equal(out, old) {
		return added, skipped, "", nil
	}
	if err := atomicfile.Writable(path); err != nil {
		return nil, nil, "", err
	}
	if backup, err = replaceFile(path, old, out); err != nil {
		return nil, nil, "", err
	}
	return added, skipped, backup, nil
}

// replaceFile replaces path by data atomically, after copying what was
// there (old) to a timestamped backup in the state dir (see backupFile).
// It returns the backup's path ("" when there was no file).
func replaceFile(path string, old, data []byte) (backup string, err error) {
	if backup, err = backupFile(path, old); err != nil {
		return "", err
	}
	return backup, writeFile(path, data)
}

// writeFile replaces path by data, keeping its mode (0600 for a new file,
// in a directory made if need be).
func writeFile(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}

func defaultConfigPath() string {
	if p := os.Getenv("DYNAMIC_MCP_CONFIG"); p != "" {
		return p
	}
	return filepath.Join(config.Home(), "config.yaml")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
