package server

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// What the hub answers or logs of a string a client sent (a protocol
// version, a task id, a method, a tool's, a prompt's or a logging level's
// name, a resource's URI, an error message of its) quotes a short prefix
// of it, marked as cut: a client could make the hub write back, and log,
// whatever it sent, up to the message limit (a 4 KiB version, a 256 KiB
// task id came back whole).
func TestErrorsQuoteLittleOfWhatClientsSent(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	cfg := &config.Config{Mode: config.ModeFlat, Settings: config.Settings{PageSize: 10, CallTimeout: config.DefaultCallTimeout, MaxMessageSize: 1 << 20}, Audit: config.Audit{Path: "off"}}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := New(cfg, upstream.New(cfg, logger), logger)
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	t.Cleanup(func() { h.Close(); h.mgr.Close() })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	big := func(start string) string { return start + strings.Repeat("z", 64<<10) }
	const modern = `"io.modelcontextprotocol/clientCapabilities":{}`
	for i, c1 := range []struct{ kind, msg, want string }{
		{"protocol version", `"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + big("2099-") + `",` + modern + `}}`, "-32022"},
		{"task id", `"method":"tasks/get","params":{"taskId":"` + big("t") + `"}`, "Task not found"},
		{"method", `"method":"` + big("x/") + `","params":{}`, "-32601"},
		{"tool name", `"method":"tools/call","params":{"name":"` + big("tool") + `","arguments":{}}`, "Tool not found"},
		{"prompt name", `"method":"prompts/get","params":{"name":"` + big("prompt") + `"}`, "Prompt not found"},
		{"resource URI", `"method":"resources/read","params":{"uri":"` + big("nowhere://") + `"}`, "Resource not found"},
		{"logging level", `"method":"logging/setLevel","params":{"level":"` + big("loud") + `"}`, "invalid logging level"},
		{"template URI", `"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"` + big("nowhere://") + `"},"argument":{"name":"a","value":"b"}}`, "Resource template not found"},
		{"ref type", `"method":"completion/complete","params":{"ref":{"type":"` + big("ref/") + `"},"argument":{"name":"a","value":"b"}}`, "unknown ref type"},
	} {
		id := fmt.Sprint(i + 1)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,` + c1.msg + `}`)
		got := c.answer(id)
		if !strings.Contains(got, c1.want) || len(got) > 1<<10 || !strings.Contains(got, "zzz…") {
			t.Errorf("a 64 KiB %s is answered with %d bytes (want %q, under 1 KiB, marked as cut): %.300s", c1.kind, len(got), c1.want, got)
		}
	}

	// A listen naming a URI the hub cannot subscribe to (logged), and an
	// error answer to no request of the hub's (logged).
	c.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + modern +
		`},"notifications":{"resourceSubscriptions":["` + big("nowhere://") + `"]}}}`)
	c.answer(`"L"`)
	c.send(`{"jsonrpc":"2.0","id":"nobody","error":{"code":-1,"message":"` + big("no") + `"}}`)
	await.For(t, 30*time.Second, "both log lines", func() bool {
		s := logs.String()
		return strings.Contains(s, "listen: resource not subscribed") && strings.Contains(s, "no request of ours")
	})
	for line := range strings.Lines(logs.String()) {
		if len(line) > 2<<10 {
			t.Errorf("a log line of %d bytes: %.300s", len(line), line)
		}
	}
	c.w.Close()
	if err := <-c.done; err != nil && err != io.EOF {
		t.Fatal(err)
	}

	// Dynamic mode's meta-tools say the group or tool they found no trace
	// of in their result.
	d := newTestHub(config.ModeDynamic)
	d.Run()
	t.Cleanup(func() { d.Close(); d.mgr.Close() })
	c = servePipes(t, d, StdioOptions{})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"` + big("g") + `","name":"t","args":{}}}}`)
	if got := c.answer("1"); !strings.Contains(got, "Unknown group") || len(got) > 1<<10 || !strings.Contains(got, "zzz…") {
		t.Errorf("a 64 KiB group is answered with %d bytes: %.300s", len(got), got)
	}
}
