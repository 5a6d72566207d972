//go:build unix

package mcplocal

import (
	"os"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// A hub whose socket file is deleted listens on it again: bridges and
// `stop` reach it there, and none starts a second hub beside it.
func TestSocketDeletedListenedAgain(t *testing.T) {
	h := start(t, time.Minute)
	if err := os.Remove(h.paths.Socket); err != nil {
		t.Fatal(err)
	}
	await.For(t, 10*socketCheck, "the socket file made again", func() bool {
		_, err := os.Stat(h.paths.Socket)
		return err == nil
	})
	if _, _, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpStatus}); reply.Status == nil || reply.PID != os.Getpid() {
		t.Fatalf("status after the socket file was deleted: %+v", reply)
	}
}
