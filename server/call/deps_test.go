package call_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const root = "github.com/dynamic-mcp/dynamic-mcp/server"

// faces are the packages that serve the hub to clients: they are given
// the hub (server.Host) and so import it. Nothing else under server may.
var faces = []string{root + "/mcphttp", root + "/mcplocal"}

// No concern imports the hub: a stage or concern package that reached back
// into server would close the import loop the chain exists to break, and
// its concern would again call into every other. Checked with go list
// -deps, as the build sees it, for every package under server but the
// hub and its faces.
func TestStagesDoNotImportServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", root+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var concerns []string
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != root && !slices.Contains(faces, pkg) {
			concerns = append(concerns, pkg)
		}
	}
	if len(concerns) < 10 { // call, audit, observe, ratelimit, validateargs, policy/gate, approve ... at least
		t.Fatalf("found only %q: the listing is not what this test expects", concerns)
	}
	deps, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}"}, concerns...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for line := range strings.Lines(string(deps)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), "|")
		if slices.Contains(concerns, pkg) && slices.Contains(strings.Fields(imports), root) {
			t.Errorf("package %s imports %s (the hub): only the faces (%q) may; a concern imports the call contract, upstream, types/* and other concerns, never the hub", pkg, root, faces)
		}
	}
}
