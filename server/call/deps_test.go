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

// The contract names what it needs of the upstream server (Upstream: its
// config, its protocol version, the request) and of the owner and the
// connection (types/owner), and imports no upstream, not even through
// another package: a stage is handed the server, never reaches into it.
func TestCallDoesNotImportUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", root+"/call").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const up = "github.com/dynamic-mcp/dynamic-mcp/upstream"
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, root+"/call") {
		t.Fatalf("go list -deps %s/call lists %q: not what this test expects", root, deps)
	}
	for _, pkg := range deps {
		if pkg == up || strings.HasPrefix(pkg, up+"/") {
			t.Errorf("server/call depends on %s: it names the upstream server by its Upstream interface and the owner and connection by types/owner, and imports no upstream", pkg)
		}
	}
}
