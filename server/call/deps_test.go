package call_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const (
	root     = "github.com/dynamic-mcp/dynamic-mcp/server"
	contract = root + "/call"
)

// concerns are the packages of the hub's concerns that are no stage (the
// hub calls them beside the chain), held to the same rule.
var concerns = []string{root + "/resultcap"}

// No stage imports the hub: a stage package (one that imports the call
// contract) that reached back into server would close the import loop the
// chain exists to break, and its concern would again call into every
// other. Checked with go list -deps, as the build sees it.
func TestStagesDoNotImportServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}|{{join .Imports " "}}`, root+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var stages []string
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), "|")
		if pkg != root && (pkg == contract || slices.Contains(strings.Fields(imports), contract)) {
			stages = append(stages, pkg)
		}
	}
	if len(stages) < 6 { // the contract, audit, observe, ratelimit, validateargs, policy/gate at least
		t.Fatalf("found only %q: the listing is not what this test expects", stages)
	}
	stages = append(stages, concerns...)
	for _, pkg := range stages {
		deps, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if slices.Contains(strings.Fields(string(deps)), root) {
			t.Errorf("stage package %s imports %s (the hub): a stage imports the call contract, upstream and types/* only", pkg, root)
		}
	}
}
