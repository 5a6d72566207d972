package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/filelock"
)

// installRecord is what install remembers so that uninstall can put the
// client's servers back. There is one per client config: installing again
// over an install keeps the first record's servers (with any the user
// added since), so they are never lost to a second install.
type installRecord struct {
	Client string `json:"client"`
	Path   string `json:"path"`
	// Existed says uninstall must keep the file: it was there before the
	// first install, or has gained servers of the user's since.
	Existed bool   `json:"existed"`
	Backup  string `json:"backup,omitempty"` // the file before the first install, while still good for a byte-exact undo
	Written string `json:"written_sha256"`   // of what install last wrote
	Servers string `json:"servers"`          // the servers to put back, as the file writes its server list
	// Pending says the install that wrote the record may not have written
	// the file (it was stopped in between): the file is then as it was
	// (Before, of what it read) or as it wrote it (Written). install and
	// uninstall finish or undo it; either way the servers come back.
	Pending bool   `json:"pending,omitempty"`
	Before  string `json:"before_sha256,omitempty"`
	// Scope names the server list in Path (see place.scope); Settings
	// what install changed in the project's local settings besides.
	Scope    string          `json:"scope,omitempty"`
	Settings *settingsRecord `json:"settings,omitempty"`
}

// untouched reports whether the file, whose contents are b, is as the
// install recorded left it: as written, or, while pending, as it was
// (when it existed: a pending record's backup and servers hold for both).
func (r *installRecord) untouched(b []byte) bool {
	return sha(b) == r.Written || r.Pending && r.Existed && sha(b) == r.Before
}

// The steps of an install, in order. Each of its writes is one step, and
// installStep is called before each: a test stops the install there, as a
// kill or a failing disk would.
const (
	stepBackup   = "backup"   // the file as it was, copied into the state dir
	stepPending  = "pending"  // the record, pending, naming the backup and the servers
	stepConfig   = "config"   // the client config, with only the dynamic-mcp entry
	stepSettings = "settings" // a project's local settings (Claude Code's local scope)
	stepRecord   = "record"   // the record, no longer pending
)

var installStep = func(step string) error { return nil }

// recordPath is where the record of an install goes, by its key (see
// place.key).
func recordPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(config.Home(), "installs", hex.EncodeToString(sum[:8])+".json")
}

// readRecord returns the record of an install by its key, nil when there
// is none.
func readRecord(key string) (*installRecord, error) {
	b, err := os.ReadFile(recordPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec installRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("install record %s: %w", recordPath(key), err)
	}
	return &rec, nil
}

// installLockWait bounds how long an install or uninstall waits for
// another of the same client config, which writes a few small files.
const installLockWait = 30 * time.Second

// lockTarget takes the lock of installs into target, held across the
// whole install or uninstall: two at once (two terminals, a script) would
// each read the record and the file before the other wrote them, and the
// second would record the first's dynamic-mcp entry as the user's
// servers, losing theirs. The lock file is kept apart from the records
// (an unlocked file is no lock, and one left by a killed install never
// blocks: the kernel let go of it). The wait ends with ctx (a first
// Ctrl-C), as import's does. target is locked as every spelling of it
// names it (samePath): a client config reached through a link is one file.
func lockTarget(ctx context.Context, target string) (*filelock.Lock, error) {
	l, err := lockOf(ctx, "install", samePath(target), installLockWait)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped waiting for another install or uninstall of %s: %w", target, err)
		}
		return nil, fmt.Errorf("another install or uninstall of %s is under way: %w", target, err)
	}
	return l, nil
}

// lockOf takes the lock of kind (a command: install, import) on the file
// target, waiting up to wait for another process holding it, and no
// longer than ctx (a first Ctrl-C ends the wait). Its lock file is in the
// state dir's locks/, named after kind and target.
func lockOf(ctx context.Context, kind, target string, wait time.Duration) (*filelock.Lock, error) {
	sum := sha256.Sum256([]byte(target))
	dir := filepath.Join(config.Home(), "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return filelock.Acquire(ctx, filepath.Join(dir, kind+"-"+hex.EncodeToString(sum[:8])+".lock"), wait)
}

func writeRecord(rec *installRecord) error {
	path := recordPath(recordKey(rec.Path, rec.Scope))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteJSON(path, rec, 0o600)
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// installCmd rewrites a client's config so that its server list is the
// one dynamic-mcp entry.
func installCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var project, cfgPath string
	var dryRun, forceProject, force bool
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.StringVar(&project, "project", "", "install for the project in `dir` (Claude Code: in your local scope of it; others: into its project config)")
	fs.StringVar(&cfgPath, "c", defaultConfigPath(), "the dynamic-mcp config `file` the entry serves")
	fs.StringVar(&cfgPath, "config", defaultConfigPath(), "the dynamic-mcp config `file` the entry serves (same as -c)")
	fs.BoolVar(&dryRun, "dry-run", false, "print the change as a diff and write nothing")
	fs.BoolVar(&forceProject, "force-project", false, "write the project's own config file even inside a git work tree, with this machine's absolute paths")
	fs.BoolVar(&force, "force", false, "install even when the client has servers the config has no group for (uninstall puts them back)")
	client, err := parseClient(fs, args, "usage: dynamic-mcp install <client> [--project DIR [--force-project]] [-c CONFIG] [--dry-run] [--force]")
	if err != nil {
		return err
	}
	p, err := installPlace(client, project, forceProject)
	if err != nil {
		return err
	}
	if project != "" && p.local == nil && !forceProject {
		if err := refuseCommitted(client, project, p.file); err != nil {
			return err
		}
	}
	absCfg, err := filepath.Abs(cfgPath)
	if err != nil {
		return err
	}
	// A config whose groups wait for a variable or a secret installs: the
	// hub serves the rest, and says what each waits for.
	cfg, err := configs.Load(absCfg)
	if errors.Is(err, os.ErrNotExist) {
		// Install before import: the entry would serve a file not there.
		imp := "dynamic-mcp import " + client.Name
		if def, _ := filepath.Abs(config.ExpandHome(defaultConfigPath())); def != absCfg {
			imp += " -o " + absCfg
		}
		mean := "" // a -c that mistypes a file beside it (config.yml): that file first
		if missing := (*config.MissingError)(nil); errors.As(err, &missing) && missing.Near != "" {
			mean = "did you mean " + missing.Near + "? If not, "
		}
		return fmt.Errorf("no config at %s, so nothing was installed: %simport the client's servers into it first (%s), or name another config with -c FILE", absCfg, mean, imp)
	}
	if err != nil {
		return fmt.Errorf("the config the entry would serve is not valid, so nothing was installed:\n%w", err)
	}
	warnPlaceholders(cfg, stderr)
	bin, err := installExecutable()
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(bin); err == nil {
		bin = resolved
	}
	if goRunBuild(bin) {
		return fmt.Errorf("this binary (%s) is a build of go run's, which go deletes (when it exits, or from its build cache); run go install ./cmd/dynamic-mcp and then $(go env GOPATH)/bin/dynamic-mcp install %s", bin, strings.Join(args, " "))
	}
	target := p.file
	if !dryRun {
		l, err := lockTarget(ctx, target)
		if err != nil {
			return err
		}
		defer l.Unlock()
	}
	old, err := clients.ReadFile(target)
	existed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", target, err)
	}
	var current []clients.Server
	if existed {
		if current, _, err = p.client.Read(old); err != nil {
			return fmt.Errorf("%s: %w; it was left as it is", target, err)
		}
	}
	if lost := lostServers(current, cfg); len(lost) > 0 {
		importCmdLine := "dynamic-mcp import " + client.Name + projectFlag(project)
		if absCfg != defaultConfigPath() {
			importCmdLine += " -o " + absCfg
		}
		for _, name := range lost {
			fmt.Fprintf(stderr, "warning: %s's server %s has no group in %s: install removes it from %s; run %s first\n", client.Title, name, absCfg, target, importCmdLine)
		}
		if !dryRun && !force {
			return fmt.Errorf("%s would lose %s the config does not serve, so nothing was changed; run %s first, or install --force (the file as it is is copied into %s, and dynamic-mcp uninstall %s puts its servers back)",
				client.Title, plural(len(lost), "server"), importCmdLine, backupDir(), client.Name+projectFlag(project))
		}
	}
	prev, err := readRecord(p.key())
	if err != nil {
		return fmt.Errorf("%w; remove it to install afresh (it says which servers uninstall would put back)", err)
	}
	// Installing over an install: put back the recorded servers and those
	// added since, so that this install records them all again. A record
	// whose entry is no longer in the file is stale: the user undid it.
	base := old
	reinstall := prev != nil && slices.ContainsFunc(current, func(s clients.Server) bool { return s.Name == installName })
	if reinstall {
		if base, err = p.client.Restore(old, []byte(prev.Servers), installName); err != nil {
			return fmt.Errorf("%s: %w; it was left as it is", target, err)
		}
	}
	out, orig, err := p.client.Install(base, clients.Entry{Name: installName, Command: bin, Args: []string{"serve", "-c", absCfg}})
	if err != nil {
		return fmt.Errorf("%s: %w; it was left as it is", target, err)
	}
	var settings *settingsChange
	if p.local != nil {
		if settings, err = p.local.plan(prev); err != nil {
			return err
		}
	}
	if dryRun {
		fmt.Fprint(stdout, dryRunDiff(target, old, out))
		if settings != nil && string(settings.out) != string(settings.old) {
			fmt.Fprint(stdout, dryRunDiff(settings.rec.Path, settings.old, settings.out))
		}
		return nil
	}
	// The record goes first, pending, so that whenever the install stops
	// there is one that puts the user's servers back (see untouched).
	rec := &installRecord{Client: client.Name, Path: target, Scope: p.scope, Existed: existed, Written: sha(out), Servers: string(orig),
		Pending: true, Before: sha(old)}
	// A read-only file is refused before the backup and record, which
	// would be left pending.
	if err := atomicfile.Writable(target); err != nil {
		return err
	}
	if err := installStep(stepBackup); err != nil {
		return err
	}
	backup, err := backupFile(target, old)
	if err != nil {
		return err
	}
	if settings != nil {
		if err := settings.backup(); err != nil {
			return err
		}
		rec.Settings = settings.rec
	}
	rec.Backup = backup
	switch {
	case reinstall && prev.untouched(old):
		// Untouched since the first install: its byte-exact undo holds.
		rec.Existed, rec.Backup = prev.Existed, prev.Backup
	case reinstall:
		// Changed since: the first backup is out of date, undo merges.
		rec.Existed, rec.Backup = true, ""
	}
	if err := installStep(stepPending); err != nil {
		return err
	}
	if err := writeRecord(rec); err != nil {
		return fmt.Errorf("could not record how to undo the install, so %s was left as it is: %w", target, err)
	}
	if err := installStep(stepConfig); err != nil {
		return err
	}
	if err := writeFile(target, out); errors.Is(err, atomicfile.ErrNotWritable) {
		return fmt.Errorf("%w; it was left as it is", err)
	} else if err != nil {
		return fmt.Errorf("%s: %w; it was left as it is (install or uninstall again to clear the pending record)", target, err)
	}
	if settings != nil {
		if err := installStep(stepSettings); err != nil {
			return err
		}
		if err := settings.write(); err != nil {
			return fmt.Errorf("%s: %w (uninstall puts everything back)", settings.rec.Path, err)
		}
	}
	if err := installStep(stepRecord); err != nil {
		return err
	}
	rec.Pending, rec.Before = false, ""
	if err := writeRecord(rec); err != nil {
		return fmt.Errorf("installed, but its record stays pending (uninstall puts the servers back all the same): %w", err)
	}
	if p.local != nil {
		fmt.Fprintf(stdout, "%s: %s now starts dynamic-mcp (serve -c %s) in your local scope of %s\n", client.Title, target, absCfg, p.local.dir)
		reportLocal(stdout, p.local, settings, current, cfg, absCfg)
	} else {
		fmt.Fprintf(stdout, "%s: %s now starts dynamic-mcp (serve -c %s)\n", client.Title, target, absCfg)
	}
	if client.Name == "codex" && clients.WroteCodexGrace(out) && !clients.WroteCodexGrace(old) { // not again on a reinstall
		fmt.Fprintf(stdout, "  and sets %s for all of Codex: its first turn waits for its MCP servers to start, each up to its startup_timeout_sec, not 1 s (see docs/troubleshooting.md)\n", clients.CodexStartupGrace)
	}
	if backup != "" {
		fmt.Fprintf(stdout, "  the file as it was: %s\n", backup)
	}
	if reinstall {
		fmt.Fprintf(stdout, "  it was installed already: the servers the first install replaced, and any added since, are kept for uninstall\n")
	} else if prev != nil && prev.Pending {
		fmt.Fprintf(stdout, "  an earlier install, stopped before it changed the file, was replaced\n")
	} else if prev != nil && prev.Backup != "" {
		fmt.Fprintf(stdout, "  an earlier install record was replaced (its entry was gone from the file); that install's backup: %s\n", prev.Backup)
	} else if prev != nil {
		fmt.Fprintf(stdout, "  an earlier install record was replaced (its entry was gone from the file); it had no backup\n")
	}
	fmt.Fprintf(stdout, "  undo with: dynamic-mcp uninstall %s%s%s\n", client.Name, projectFlag(project), map[bool]string{true: " --force-project"}[forceProject && project != ""])
	for _, u := range unresolvedOf(cfg) {
		fmt.Fprintln(stdout, "  "+u.warning())
	}
	return nil
}

// lostServers names the servers of a client's list (current) that cfg has
// no group for: none named as import names a server's group (groupKey),
// and no server with the same command and args, or URL (import renames
// a group whose name is taken). install would take them from the client
// with nothing to serve them. The hub's own entries are not counted.
func lostServers(current []clients.Server, cfg *config.Config) []string {
	var lost []string
	for _, s := range current {
		if s.Name == installName || s.Command != "" && runsHub(s.Command, s.Args) {
			continue
		}
		if !slices.ContainsFunc(cfg.Groups, func(g *config.Group) bool { return serves(g, s) }) {
			lost = append(lost, s.Name)
		}
	}
	return lost
}

// serves reports whether group g is client server s imported.
func serves(g *config.Group, s clients.Server) bool {
	if g.Name == groupKey(s.Name) {
		return true
	}
	return slices.ContainsFunc(g.Servers, func(srv *config.Server) bool {
		if s.Command != "" {
			return srv.Command == s.Command && slices.Equal(srv.Args, s.Args)
		}
		return s.URL != "" && srv.URL == s.URL
	})
}

// installExecutable is the binary install writes into the client's
// config (a test gives another).
var installExecutable = os.Executable

// goRunBuild reports whether bin is a binary go run built: in
// .../go-build*/.../exe/, which go removes when the command exits, or (Go
// 1.24 on, from the second run of a build) in the build cache,
// $GOCACHE/ab/ab...(64 hex digits)-d/, which go clean -cache and the
// cache's trimming remove: a client config naming it would start nothing
// one day, and names another build at each change.
func goRunBuild(bin string) bool {
	dir := filepath.ToSlash(filepath.Dir(bin))
	if path.Base(dir) == "exe" && strings.Contains(dir, "/go-build") {
		return true
	}
	entry, shard := path.Base(dir), path.Base(path.Dir(dir))
	hash, ok := strings.CutSuffix(entry, "-d")
	_, err := hex.DecodeString(hash)
	return ok && err == nil && len(hash) == 64 && len(shard) == 2 && strings.HasPrefix(hash, shard)
}

// installName is the name of the one server install leaves.
const installName = "dynamic-mcp"

// parseClient parses a command naming one client.
func parseClient(fs *flag.FlagSet, args []string, usage string) (*clients.Client, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, usageError{usage}
	}
	return clients.Find(clients.CurrentEnv(), pos[0])
}

func projectFlag(project string) string {
	if project == "" {
		return ""
	}
	return " --project " + project
}

// uninstallCmd puts back the servers install replaced: the file as it was
// when nothing has touched it since, else its recorded servers together
// with every server the user added since (all but the dynamic-mcp entry),
// and for a project's local scope the project's local settings too.
func uninstallCmd(ctx context.Context, args []string, stdout io.Writer) (err error) {
	var project string
	var forceProject bool
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	fs.StringVar(&project, "project", "", "the project in `dir` install was given")
	fs.BoolVar(&forceProject, "force-project", false, "undo an install --force-project (found without it when there is no other)")
	client, err := parseClient(fs, args, "usage: dynamic-mcp uninstall <client> [--project DIR [--force-project]]")
	if err != nil {
		return err
	}
	p, err := installPlace(client, project, forceProject)
	if err != nil {
		return err
	}
	if p.local != nil {
		// Not installed in the local scope: an install --force-project
		// into the project's .mcp.json, when there is one.
		if rec, _ := readRecord(p.key()); rec == nil {
			if fp, err := installPlace(client, project, true); err == nil {
				if rec, _ := readRecord(fp.key()); rec != nil {
					p = fp
				}
			}
		}
	}
	target := p.file
	l, err := lockTarget(ctx, target)
	if err != nil {
		return err
	}
	defer l.Unlock()
	rec, err := readRecord(p.key())
	if err != nil {
		return err
	}
	if rec == nil {
		return fmt.Errorf("dynamic-mcp install did not change %s (no record of it)", target)
	}
	// The project's local settings last, once the server list is back
	// and the record gone: a failure here names what to do by hand.
	defer func() {
		if s := rec.Settings; s != nil && len(s.Disabled) > 0 && err == nil {
			if err = undoSettings(s); err == nil {
				pruneBackups(s.Path)
				fmt.Fprintf(stdout, "  %s no longer turns off %s of the project's .mcp.json\n", s.Path, strings.Join(s.Disabled, ", "))
			}
		}
	}()
	current, err := clients.ReadFile(target)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err != nil && !rec.Existed && rec.Servers == "" {
		// Deleted since, and nothing of the user's to put back.
		os.Remove(recordPath(p.key()))
		fmt.Fprintf(stdout, "%s: %s is gone already; nothing to put back\n", client.Title, target)
		return nil
	}
	if err == nil && rec.Pending && sha(current) == rec.Before && !hasEntry(p.client, current) {
		// Stopped before it wrote the file: nothing to put back.
		os.Remove(recordPath(p.key()))
		fmt.Fprintf(stdout, "%s: the install into %s stopped before it changed the file; nothing to put back\n", client.Title, target)
		return nil
	}
	if err := atomicfile.Writable(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err // before any backup is made
	}
	untouched := err == nil && rec.untouched(current)
	var prev []byte
	var backup string
	if untouched && rec.Backup != "" {
		if prev, err = os.ReadFile(rec.Backup); err != nil {
			fmt.Fprintf(stdout, "note: the backup %s cannot be read (%v): the recorded servers are put back instead\n", rec.Backup, err)
		}
	}
	switch {
	case untouched && !rec.Existed:
		if err := os.Remove(target); err != nil {
			return err
		}
	case prev != nil:
		// Untouched since install: the file comes back byte for byte.
		if backup, err = replaceFile(target, current, prev); err != nil {
			return err
		}
	default:
		restored, err := p.client.Restore(current, []byte(rec.Servers), installName)
		if err != nil {
			return fmt.Errorf("%s: %w; it was left as it is", target, err)
		}
		if backup, err = replaceFile(target, current, restored); err != nil {
			return err
		}
	}
	os.Remove(recordPath(p.key()))
	pruneBackups(target) // the install's backup is no longer needed
	fmt.Fprintf(stdout, "%s: %s has its own servers back\n", client.Title, target)
	if backup != "" {
		fmt.Fprintf(stdout, "  the file as it was with dynamic-mcp installed: %s\n", backup)
	}
	return nil
}

// hasEntry reports whether the client config b holds the dynamic-mcp
// entry (true when it cannot be read: uninstall then merges, as always).
func hasEntry(client *clients.Client, b []byte) bool {
	servers, _, err := client.Read(b)
	return err != nil || slices.ContainsFunc(servers, func(s clients.Server) bool { return s.Name == installName })
}
