package server

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A panic recovered in the hub's event loop, or reported by a face, is
// logged once at Error with its stack, and counted; the loop goes on.
func TestRecoveredPanicsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	cfg := &config.Config{Mode: config.ModeFlat, Settings: config.Settings{PageSize: 10, CallTimeout: config.DefaultCallTimeout, MaxMessageSize: 1 << 20},
		Audit: config.Audit{Path: "off"}}
	h, err := New(cfg, upstream.New(cfg, logger), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ran := false
	h.safely("route an upstream event", func() { panic("boom") })
	h.safely("refresh the view", func() { ran = true })
	h.Panics().Recovered("tools/call", "bang", []byte("goroutine 7 [running]:\nface.serve()"))
	if !ran || h.Panics().Count() != 2 {
		t.Fatalf("ran on %v, %d panics counted, want 2", ran, h.Panics().Count())
	}
	got := log.String()
	if n := strings.Count(got, "recovered from a panic"); n != 2 {
		t.Errorf("%d log lines for 2 panics:\n%s", n, got)
	}
	for _, want := range []string{"level=ERROR", "method=\"route an upstream event\" panic=boom", "panics_test.go", "method=tools/call panic=bang", "face.serve()"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the log:\n%s", want, got)
		}
	}
}
