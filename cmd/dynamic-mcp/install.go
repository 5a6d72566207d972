package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// installRecord is what install remembers so that uninstall can put the
// client's servers back.
type installRecord struct {
	Client  string `json:"client"`
	Path    string `json:"path"`
	Existed bool   `json:"existed"` // the file was there before install
	Backup  string `json:"backup,omitempty"`
	Written string `json:"written_sha256"` // of what install wrote
	Servers string `json:"servers"`        // the server list install replaced, as the file had it
}

func recordPath(target string) string {
	sum := sha256.Sum256([]byte(target))
	return filepath.Join(config.Home(), "installs", hex.EncodeToString(sum[:8])+".json")
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// installCmd rewrites a client's config so that its server list is the
// one dynamic-mcp entry.
func installCmd(args []string, stdout io.Writer) error {
	var project, cfgPath string
	var dryRun bool
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.StringVar(&project, "project", "", "install into the client's project config in `dir`")
	fs.StringVar(&cfgPath, "c", defaultConfigPath(), "the dynamic-mcp `config` the entry serves")
	fs.BoolVar(&dryRun, "dry-run", false, "print the change as a diff and write nothing")
	client, target, err := clientTarget(fs, args, &project, "usage: dynamic-mcp install <client> [--project DIR] [-c CONFIG] [--dry-run]")
	if err != nil {
		return err
	}
	absCfg, err := filepath.Abs(cfgPath)
	if err != nil {
		return err
	}
	if _, err := config.Load(absCfg); err != nil {
		return fmt.Errorf("the config the entry would serve is not valid, so nothing was installed:\n%w", err)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(bin); err == nil {
		bin = resolved
	}
	old, err := os.ReadFile(target)
	existed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", target, err)
	}
	if existed {
		if _, _, err := client.Read(old); err != nil {
			return fmt.Errorf("%s: %w; it was left as it is", target, err)
		}
	}
	out, orig, err := client.Install(old, clients.Entry{Name: "dynamic-mcp", Command: bin, Args: []string{"serve", "-c", absCfg}})
	if err != nil {
		return fmt.Errorf("%s: %w; it was left as it is", target, err)
	}
	if dryRun {
		fmt.Fprint(stdout, unifiedDiff(target, old, out))
		return nil
	}
	backup, err := replaceFile(target, old, out)
	if err != nil {
		return err
	}
	rec := installRecord{Client: client.Name, Path: target, Existed: existed, Backup: backup, Written: sha(out), Servers: string(orig)}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if _, err := replaceFile(recordPath(target), nil, b); err != nil {
		return fmt.Errorf("installed, but could not record how to undo it: %w", err)
	}
	fmt.Fprintf(stdout, "%s: %s now starts dynamic-mcp (serve -c %s)\n", client.Title, target, absCfg)
	if backup != "" {
		fmt.Fprintf(stdout, "  the file as it was: %s\n", backup)
	}
	fmt.Fprintf(stdout, "  undo with: dynamic-mcp uninstall %s%s\n", client.Name, projectFlag(project))
	return nil
}

// clientTarget parses a command naming one client and finds the config
// file it works on.
func clientTarget(fs *flag.FlagSet, args []string, project *string, usage string) (*clients.Client, string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, "", err
	}
	if len(pos) != 1 {
		return nil, "", usageError{usage}
	}
	env := clients.CurrentEnv()
	client, err := clients.Find(env, pos[0])
	if err != nil {
		return nil, "", err
	}
	target, err := client.Path(env, *project)
	return client, target, err
}

func projectFlag(project string) string {
	if project == "" {
		return ""
	}
	return " --project " + project
}

// uninstallCmd puts back the servers install replaced: the file as it was
// when nothing has touched it since, else its server list.
func uninstallCmd(args []string, stdout io.Writer) error {
	var project string
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	fs.StringVar(&project, "project", "", "the client's project config in `dir`")
	client, target, err := clientTarget(fs, args, &project, "usage: dynamic-mcp uninstall <client> [--project DIR]")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(recordPath(target))
	if err != nil {
		return fmt.Errorf("dynamic-mcp install did not change %s (no record of it)", target)
	}
	var rec installRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return err
	}
	current, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	switch {
	case sha(current) == rec.Written && !rec.Existed:
		if err := os.Remove(target); err != nil {
			return err
		}
	case sha(current) == rec.Written:
		// Untouched since install: the file comes back byte for byte.
		prev, err := os.ReadFile(rec.Backup)
		if err != nil {
			return fmt.Errorf("read the backup %s: %w", rec.Backup, err)
		}
		if _, err := replaceFile(target, current, prev); err != nil {
			return err
		}
	default:
		restored, err := client.Restore(current, []byte(rec.Servers))
		if err != nil {
			return fmt.Errorf("%s: %w; it was left as it is", target, err)
		}
		if _, err := replaceFile(target, current, restored); err != nil {
			return err
		}
	}
	os.Remove(recordPath(target))
	fmt.Fprintf(stdout, "%s: %s has its own servers back\n", client.Title, target)
	return nil
}

// unifiedDiff is a minimal unified diff of two texts, for --dry-run.
func unifiedDiff(name string, a, b []byte) string {
	x, y := splitLines(a), splitLines(b)
	// Longest common subsequence, then walk it.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "--- %s\n+++ %s (after install)\n", name, name)
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			fmt.Fprintf(&out, " %s\n", x[i])
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+%s\n", y[j])
			j++
		default:
			fmt.Fprintf(&out, "-%s\n", x[i])
			i++
		}
	}
	return out.String()
}

func splitLines(b []byte) []string {
	s := string(bytes.TrimSuffix(b, []byte("\n")))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
