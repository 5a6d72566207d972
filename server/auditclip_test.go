package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// What a client writes (a tool name it invents, a URI, arguments, and the
// error that quotes them) reaches the audit trail clipped, marked as
// clipped, so that a line stays small however much the client sent: a
// 4 MiB tool name made a 4 MiB line.
func TestAuditClipsWhatClientsWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h, mgr := runHub(t, fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: %q, arguments: true}\nsettings: {call_timeout: 60s}\ngroups:\n  f:\n    description: fake\n    command: %q\n",
		t.TempDir(), path, fakeBin), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	// Each several times a line's bound (16 KiB) and the arguments' (4
	// KiB): megabytes cost minutes under -race and show the same clip.
	invented := strings.Repeat("x", 256<<10)
	bigArgs := `{"text":"` + strings.Repeat("é", 32<<10) + `"}`
	uri := "fake://fake/item/" + strings.Repeat("z", 64<<10)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + invented + `","arguments":` + bigArgs + `}}`)
	if got := c.answer("1"); !strings.Contains(got, "Tool not found") {
		t.Fatalf("invented tool: %.200s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__echo","arguments":` + bigArgs + `}}`)
	if got := c.answer("2"); !strings.Contains(got, `"text":"éé`) {
		t.Fatalf("echo: %.200s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
	if got := c.answer("3"); !strings.Contains(got, "content of fake://fake/item/zz") {
		t.Fatalf("read: %.200s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"small"}}}`)
	c.answer("4")
	c.w.Close()
	if err := <-c.done; err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d records, want 4", len(lines))
	}
	sum := sha256.Sum256([]byte(bigArgs))
	digest := hex.EncodeToString(sum[:])
	const maxLine = 16 << 10
	for i, line := range lines {
		if len(line) > maxLine {
			t.Errorf("record %d: a line of %d bytes, want at most %d", i+1, len(line), maxLine)
		}
		var r struct {
			auditRecord
			Args json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("record %d: %v: %.300s", i+1, err, line)
		}
		switch i {
		case 0:
			if !r.Clipped || !strings.HasPrefix(r.Tool, "xxxx") || !strings.HasSuffix(r.Tool, clippedMark) || r.Decision != "not_found" {
				t.Errorf("invented tool's record: %.300s", line)
			}
		case 1:
			if !r.Clipped || r.Tool != "echo" || r.Outcome != "ok" {
				t.Errorf("echo's record: %.300s", line)
			}
		case 2:
			if !r.Clipped || !strings.HasPrefix(r.URI, "fake://fake/item/zzz") || !strings.HasSuffix(r.URI, clippedMark) {
				t.Errorf("read's record: %.300s", line)
			}
		case 3:
			if r.Clipped || string(r.Args) != `{"text":"small"}` {
				t.Errorf("a small call's record: %s", line)
			}
		}
		if i < 2 && (r.Args != nil || r.ArgumentsSHA256 != digest || r.ArgumentsBytes != len(bigArgs)) {
			t.Errorf("record %d: big arguments kept as %.100s, digest %q (want %q), %d bytes (want %d)",
				i+1, r.Args, r.ArgumentsSHA256, digest, r.ArgumentsBytes, len(bigArgs))
		}
	}
}
