package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// tools lines up the descriptions of every group's tools in one column,
// also past a note (the tools a deny-list hides) between groups.
func TestToolsColumnsLineUpAcrossGroups(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q, deny: [\"^echo$\"] }\n  a-much-longer-group-name: { description: gee, command: %q }\n", fakeBin, fakeBin)), 0o600)
	out, errOut, code := runCommand(t, "", "tools", "-c", cfg)
	if code != 0 || !strings.Contains(out, "(1 more of f hidden by the group's deny/allow lists)") {
		t.Fatalf("tools: exit %d\n%s%s", code, out, errOut)
	}
	row := regexp.MustCompile(`^( *\S+ {2,})\S`) // a name, then its description
	columns := map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "(") {
			continue // a note
		}
		if m := row.FindStringSubmatch(line); m != nil {
			columns[len(m[1])] = true
		}
	}
	if len(columns) != 1 {
		t.Errorf("descriptions start at columns %v, want one:\n%s", columns, out)
	}
}

// tools of a group the config has not names the one it most likely
// meant, else the groups there are, or says there are none.
func TestToolsOfNoSuchGroup(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  memory: { description: m, command: %q }\n  files: { description: f, command: %q }\n", fakeBin, fakeBin)), 0o600)
	for arg, want := range map[string]string{
		"memroy": `no group "memroy" in ` + cfg + `: did you mean memory?`,
		"web":    `no group "web" in ` + cfg + ` (its groups: memory, files)`,
	} {
		if _, errOut, code := runCommand(t, "", "tools", "-c", cfg, arg); code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("tools %s: exit %d\n%s\nwant %s", arg, code, errOut, want)
		}
	}
	// A config that loads has a group; one narrowed to none (a view of
	// it) is said to have none, not "(its groups: )".
	if err := noGroup(&config.Config{Path: "c.yaml"}, "web"); err == nil || err.Error() != `no group "web" in c.yaml: the config has no groups` {
		t.Errorf("no group of a config with none: %v", err)
	}
}

// tools stops a server that ignores the end of its stdin and SIGTERM with
// the stop ladder's waits a second each, not the hub's 5 s: it asked the
// server nothing that needs time to wind down.
func TestToolsStopsServersWithinASecondAStep(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("groups:\n  f: { description: fake, command: %q, args: [\"-ignore-term\"] }\n", fakeBin)), 0o600)
	out, errOut, code := runCommand(t, "", "tools", "-c", cfg, "--log-level", "info", "--log-format", "json")
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s%s", code, out, errOut)
	}
	// The SIGTERM step is the ladder's (info), a SIGKILL a warning.
	for _, step := range []string{`"INFO","msg":"child did not exit after stdin closed, sending SIGTERM"`, `"WARN","msg":"child did not exit after SIGTERM, sending SIGKILL"`} {
		if !strings.Contains(errOut, `"level":`+step+`,"upstream":"f","grace":1000000000}`) {
			t.Errorf("no %s with a 1 s grace:\n%s", step, errOut)
		}
	}
}
