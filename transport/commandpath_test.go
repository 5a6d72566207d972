//go:build unix

package transport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server whose env: sets PATH finds its command there, not only in the
// hub's PATH (which, for a shared hub, is the PATH of whichever client
// started it).
func TestCommandFoundInTheServersPATH(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dmcp-only-here"), []byte("#!/bin/sh\necho found\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "/usr/bin:/bin") // the hub's own PATH lacks dir
	out, err := runChild(t, ProcessSpec{Command: "dmcp-only-here", Env: map[string]string{"PATH": "relative:" + dir + ":/usr/bin:/bin"}})
	if strings.TrimSpace(out) != "found" || err == nil || err.Error() != "exited (status 0)" {
		t.Fatalf("out %q, %v", out, err)
	}
	// Without it, the hub's PATH alone is searched.
	if _, err := StartProcess(ProcessSpec{Command: "dmcp-only-here"}, discard); err == nil {
		t.Fatal("started without the server's PATH")
	}
}
