package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// largeHub runs a hub in mode in front of the fake upstream with its
// large tool, with settings (inside settings: {...}) and more of the
// config's top-level keys (tail), its audit trail at audit ("off" for
// none), ready to serve.
func largeHub(t *testing.T, mode config.Mode, settings, tail, audit string) (*Hub, string) {
	t.Helper()
	yaml := flatFakeYAML(t.TempDir(), "call_timeout: 5s, "+settings, `    args: ["-large"]`+"\n") + tail
	yaml = strings.Replace(yaml, "mode: flat", "mode: "+string(mode), 1)
	yaml = strings.Replace(yaml, `audit: {path: "off"}`, fmt.Sprintf("audit: {path: %q}", audit), 1)
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool {
		v := h.snapshot().view
		return v.GroupIndex["f"] != nil && v.GroupIndex["f"].ToolRoutes["large"].Server != nil && !v.Starting
	})
	return h, yaml
}

// largeClient is a client session of h named name (clientInfo), with
// its own session id, in profile ("" for none).
func largeClient(t *testing.T, h *Hub, id, name, profile string) *pipeClient {
	c := servePipes(t, h, StdioOptions{SessionID: id, Profile: profile})
	c.send(strings.Replace(initializeMsg, `"name":"t"`, fmt.Sprintf("%q:%q", "name", name), 1))
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// rpcAnswer is a JSON-RPC answer taken apart.
type rpcAnswer struct {
	line   string
	Result json.RawMessage
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

func (c *pipeClient) rpc(id int, method, params string) rpcAnswer {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	a := rpcAnswer{line: strings.TrimSuffix(c.answer(fmt.Sprint(id)), "\n")}
	if err := json.Unmarshal([]byte(a.line), &a); err != nil {
		c.t.Fatalf("answer %q: %v", a.line, err)
	}
	return a
}

// callLarge calls the large tool for a result of kind and about n bytes,
// in flat mode or through call_dynamic_tool.
func (c *pipeClient) callLarge(id int, mode config.Mode, kind string, n int) rpcAnswer {
	c.t.Helper()
	args := fmt.Sprintf(`{"text":%q,"ms":%d}`, kind, n)
	if mode == config.ModeDynamic {
		return c.rpc(id, "tools/call", `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"large","args":`+args+`}}`)
	}
	return c.rpc(id, "tools/call", `{"name":"f__large","arguments":`+args+`}`)
}

// cutAnswer is a cut tool result taken apart.
type cutAnswer struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Size     int    `json:"size"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta"`
}

// link is the URI of the hub's resource_link in the answer, "" for none.
func (a cutAnswer) link() string {
	for _, b := range a.Content {
		if b.Type == "resource_link" && strings.HasPrefix(b.URI, resultcap.Scheme) {
			return b.URI
		}
	}
	return ""
}

func (a cutAnswer) text() string {
	var b strings.Builder
	for _, c := range a.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// cut checks that an answer is under limit bytes, whole message and
// result, and has the hub's link.
func cut(t *testing.T, a rpcAnswer, limit int) cutAnswer {
	t.Helper()
	if a.Error != nil {
		t.Fatalf("error answer: %s", a.line)
	}
	if len(a.line) >= limit || len(a.Result) >= limit {
		t.Fatalf("the answer takes %d bytes (result %d), want under %d", len(a.line), len(a.Result), limit)
	}
	var r cutAnswer
	if err := json.Unmarshal(a.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.link() == "" {
		t.Fatalf("no link to the whole result in %.2000s", a.Result)
	}
	return r
}

// readAll reads every page of a kept result and returns its bytes, each
// page answer checked to be under limit.
func (c *pipeClient) readAll(id int, uri string, limit int) []byte {
	c.t.Helper()
	var whole []byte
	pages := 1
	for p := 1; p <= pages; p++ {
		a := c.rpc(id+p, "resources/read", fmt.Sprintf(`{"uri":"%s?page=%d"}`, uri, p))
		if a.Error != nil {
			c.t.Fatalf("page %d: %s", p, a.line)
		}
		if len(a.line) >= limit {
			c.t.Errorf("page %d's answer takes %d bytes, want under %d", p, len(a.line), limit)
		}
		var r struct {
			Contents []struct {
				URI, MimeType, Text, Blob string
			}
			Meta struct {
				Pages int `json:"dynamic-mcp/pages"`
				Page  int `json:"dynamic-mcp/page"`
				Bytes int `json:"dynamic-mcp/bytes"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(a.Result, &r); err != nil || len(r.Contents) != 1 {
			c.t.Fatalf("page %d: %v %s", p, err, a.line)
		}
		if r.Meta.Page != p || r.Contents[0].MimeType != "application/json" || r.Contents[0].URI != fmt.Sprintf("%s?page=%d", uri, p) {
			c.t.Errorf("page %d: %+v %s", p, r.Meta, r.Contents[0].URI)
		}
		pages = r.Meta.Pages
		if r.Contents[0].Blob != "" {
			b, err := base64.StdEncoding.DecodeString(r.Contents[0].Blob)
			if err != nil {
				c.t.Fatal(err)
			}
			whole = append(whole, b...)
		} else {
			whole = append(whole, r.Contents[0].Text...)
		}
	}
	return whole
}

// The test: a 300 KB tool result under max_result: 20KB is
// answered under 20 KB with a link, and reading the link's pages gives
// back the original bytes exactly; a result under the cap is untouched;
// another session cannot read the result, which it is told does not
// exist, exactly as for a URI that does not; the read is audited as a
// read of the call, and refused once the policy denies the call.
func TestMaxResultCutAndPages(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	for _, mode := range []config.Mode{config.ModeFlat, config.ModeDynamic} {
		t.Run(string(mode), func(t *testing.T) {
			trail := filepath.Join(t.TempDir(), "audit.jsonl")
			h, yaml := largeHub(t, mode, "max_result: 20KB", "", trail)
			c := largeClient(t, h, "a", "t", "")
			const limit = 20000

			original := fakeupstream.LargeResult("text", 300000)
			a := c.callLarge(1, mode, "text", 300000)
			r := cut(t, a, limit)
			text := r.text()
			for _, want := range []string{"line 000001: \"quoted\"", "bytes cut here; the whole result is at " + r.link(), "300,", "max_result of 20,000 bytes", "?page=1 to ?page="} {
				if !strings.Contains(text, want) {
					t.Errorf("the cut answer lacks %q:\n%s", want, text[len(text)-min(len(text), 1500):])
				}
			}
			var o cutAnswer
			if err := json.Unmarshal([]byte(original), &o); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(o.Content[0].Text, "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasSuffix(text[:strings.Index(text, "[dynamic-mcp: this result")], last+"\n") {
				t.Errorf("the cut text does not end with the text's last line %q", last)
			}
			if string(r.Meta) != `{"example.com/k":"v"}` {
				t.Errorf("_meta %s", r.Meta)
			}
			whole := c.readAll(10, r.link(), limit)
			if string(whole) != original {
				t.Fatalf("the pages give %d bytes, not the original %d", len(whole), len(original))
			}
			first := c.rpc(100, "resources/read", fmt.Sprintf(`{"uri":%q}`, r.link()))
			page1 := c.rpc(101, "resources/read", fmt.Sprintf(`{"uri":"%s?page=1"}`, r.link()))
			if first.Error != nil || !bytes.Equal(first.Result, page1.Result) {
				t.Errorf("without ?page: %.300s", first.line)
			}
			for i, bad := range []string{"?page=0", "?page=999", "?page=x", "?pages=1"} {
				if a := c.rpc(110+i, "resources/read", fmt.Sprintf(`{"uri":"%s%s"}`, r.link(), bad)); a.Error == nil || a.Error.Code != codeInvalidParams {
					t.Errorf("%s: %s", bad, a.line)
				}
			}

			if a := c.rpc(120, "resources/subscribe", fmt.Sprintf(`{"uri":%q}`, r.link())); a.Error == nil || a.Error.Code != codeResourceNotFound {
				t.Errorf("subscribe to a kept result: %s", a.line)
			}

			// Under the cap: untouched, byte for byte.
			small := c.callLarge(2, mode, "small", 5000)
			if string(small.Result) != fakeupstream.LargeResult("small", 5000) {
				t.Errorf("a result under the cap changed:\n%s", small.Result)
			}

			// Another session: not found, as a URI that does not exist.
			other := largeClient(t, h, "b", "t", "")
			theirs := other.rpc(1, "resources/read", fmt.Sprintf(`{"uri":%q}`, r.link()))
			unknown := other.rpc(2, "resources/read", fmt.Sprintf(`{"uri":%q}`, resultcap.Scheme+"nope"))
			if theirs.Error == nil || unknown.Error == nil || theirs.Error.Code != codeResourceNotFound || theirs.Error.Message != unknown.Error.Message {
				t.Fatalf("another session's read: %s\nunknown: %s", theirs.line, unknown.line)
			}

			// The policy now asks before the call: its pages are read
			// without asking again (this client cannot be asked). It
			// denies the call: its pages are refused.
			withRule := func(rule string) *config.Config {
				cfg, err := config.Parse("test.yaml", strings.NewReader(strings.Replace(yaml, `    args: ["-large"]`,
					"    args: [\"-large\"]\n    policy:\n      - "+rule, 1)))
				if err != nil {
					t.Fatal(err)
				}
				cfg.Settings.PromptTimeout = 300 * time.Millisecond // this client waits in the inbox: no one answers
				return cfg
			}
			h.SetConfig(withRule("{action: prompt, tool: large}"))
			if a := c.rpc(199, "resources/read", fmt.Sprintf(`{"uri":%q}`, r.link())); a.Error != nil {
				t.Errorf("read of a result whose call a prompt rule asks about: %s", a.line)
			}
			if a := c.callLarge(198, mode, "text", 300000); !strings.Contains(a.line, "Blocked by policy") || !strings.Contains(a.line, "no answer within") {
				t.Errorf("the call itself under the prompt rule: %.300s", a.line)
			}
			h.SetConfig(withRule("{action: deny, tool: large, description: no large}"))
			if a := c.rpc(200, "resources/read", fmt.Sprintf(`{"uri":%q}`, r.link())); a.Error == nil || a.Error.Code != codePolicyBlocked || !strings.Contains(a.Error.Message, "no large") {
				t.Errorf("read of a denied call's result: %s", a.line)
			}
			await.For(t, 5*time.Second, "the reads in the audit trail", func() bool {
				b, _ := os.ReadFile(trail)
				return strings.Count(string(b), `"method":"resources/read"`) >= 3 && strings.Contains(string(b), `"uri":"`+r.link()+`?page=2"`) &&
					strings.Contains(string(b), `"decision":"deny"`)
			})
			b, _ := os.ReadFile(trail)
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, `"uri":"`+r.link()+`?page=2"`) && (!strings.Contains(line, `"tool":"large"`) || !strings.Contains(line, `"group":"f"`)) {
					t.Errorf("a page's read audited as %s", line)
				}
			}
		})
	}
}

// The cap is the client's clients: rule's, else its profile's, else
// settings'; off in a rule lifts it.
func TestMaxResultPerClientAndProfile(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	h, _ := largeHub(t, config.ModeFlat, "max_result: 100KB",
		"profiles:\n  p: {groups: [f], max_result: 30KB}\nclients:\n  - {match: 'tight*', max_result: 5000 tokens}\n  - {match: 'loose*', max_result: 'off'}\n", "off")
	// Larger than the largest cap, as small as that allows: the hub's
	// CPU under -race follows the bytes it cuts, keeps and pages.
	original := fakeupstream.LargeResult("text", 120000)
	for _, tc := range []struct {
		client, profile string
		limit           int
	}{
		{"t", "", 100000}, {"t", "p", 30000}, {"tight-client", "", 20000}, {"tight-client", "p", 20000}, {"loose-client", "p", 0},
	} {
		t.Run(tc.client+"/"+tc.profile, func(t *testing.T) {
			c := largeClient(t, h, tc.client+tc.profile, tc.client, tc.profile)
			a := c.callLarge(1, config.ModeFlat, "text", 120000)
			if tc.limit == 0 {
				if string(a.Result) != original {
					t.Fatalf("no cap, yet the result changed (%d bytes)", len(a.Result))
				}
				return
			}
			r := cut(t, a, tc.limit)
			if len(a.line) < tc.limit*8/10 {
				t.Errorf("the answer takes %d bytes of the %d it may", len(a.line), tc.limit)
			}
			if whole := c.readAll(10, r.link(), tc.limit); string(whole) != original {
				t.Errorf("the pages give %d bytes, not the original %d", len(whole), len(original))
			}
		})
	}
}

// structuredContent over a quarter of the cap is left out, with the note
// saying so; an image too large becomes a note; resource links, small
// blocks, isError and _meta pass; many small blocks are left out from the
// middle; and in every case the pages give back the original.
func TestMaxResultKinds(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	h, _ := largeHub(t, config.ModeFlat, "max_result: 20KB", "", "off")
	c := largeClient(t, h, "a", "t", "")
	// Three times the cap: each kind is cut as it would be at any size
	// (the blocks, 600 of them, left out from the middle), for the CPU of
	// the bytes through the hub under -race.
	const size = 60000
	for i, kind := range []string{"structured", "image", "mixed", "blocks"} {
		t.Run(kind, func(t *testing.T) {
			a := c.callLarge(i*1000, config.ModeFlat, kind, size)
			r := cut(t, a, 20000)
			text := r.text()
			switch kind {
			case "structured":
				if r.StructuredContent != nil || !strings.Contains(text, "left out: structuredContent (") || !strings.Contains(text, "a list of items") {
					t.Errorf("structured: %s", a.Result)
				}
			case "image", "mixed":
				for _, b := range r.Content {
					if b.Type == "image" {
						t.Errorf("an image of %d bytes passed", len(a.Result))
					}
				}
				if !strings.Contains(text, "[dynamic-mcp: image (image/png, ") {
					t.Errorf("no note of the image: %.2000s", text)
				}
				var upstreamLink bool
				for _, b := range r.Content {
					upstreamLink = upstreamLink || b.Type == "resource_link" && b.URI == "fake://large/res"
				}
				if !upstreamLink {
					t.Errorf("the upstream's resource link is gone: %.2000s", a.Result)
				}
				if kind == "mixed" && (!r.IsError || string(r.Meta) != `{"example.com/k":"v"}` || !strings.HasPrefix(text, "first words") || !strings.Contains(text, "last words")) {
					t.Errorf("mixed: isError %v _meta %s text %.300s", r.IsError, r.Meta, text)
				}
			case "blocks":
				if !strings.Contains(text, "block 00000:") || !strings.Contains(text, "block 00599:") || !strings.Contains(text, "content blocks (") {
					t.Errorf("blocks: %.3000s", text)
				}
			}
			if whole := c.readAll(i*1000+10, r.link(), 20000); string(whole) != fakeupstream.LargeResult(kind, size) {
				t.Errorf("the pages give %d bytes, not the original %d", len(whole), len(fakeupstream.LargeResult(kind, size)))
			}
		})
	}
}

// Through the hub: a session's oldest kept result goes when it has its
// number of them, and every result after its time; the answer that named
// it stays what it was, and the read is told it does not exist.
func TestMaxResultStoreEvicts(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	h, _ := largeHub(t, config.ModeFlat, "max_result: 20KB", "", "off")
	var (
		mu  sync.Mutex // the store's clock is read by the hub's goroutines
		now = time.Now()
	)
	// No client yet: the store is the hub's from here on.
	h.results = resultcap.New(resultcap.Options{PerCaller: 2, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	snap := h.snapshot()
	snap.requests = h.newRequestChain(snap) // its result budget cuts into this store
	c := largeClient(t, h, "a", "t", "")
	var links []string
	for i := range 3 {
		links = append(links, cut(t, c.callLarge(i+1, config.ModeFlat, "text", 100000), 20000).link())
	}
	read := func(id int, uri string) rpcAnswer { return c.rpc(id, "resources/read", fmt.Sprintf(`{"uri":%q}`, uri)) }
	if a := read(10, links[0]); a.Error == nil || a.Error.Code != codeResourceNotFound {
		t.Errorf("the oldest of three, kept two: %s", a.line)
	}
	if a := read(11, links[1]); a.Error != nil {
		t.Errorf("the second of three: %s", a.line)
	}
	mu.Lock()
	now = now.Add(resultcap.TTL)
	mu.Unlock()
	if a := read(12, links[2]); a.Error == nil || a.Error.Code != codeResourceNotFound {
		t.Errorf("a result past its time: %s", a.line)
	}
	if cuts, n, bytes, evicted := h.results.Stats(); cuts != 3 || n != 0 || bytes != 0 || evicted != 1 {
		t.Errorf("%d results cut, %d of %d bytes kept, %d evicted", cuts, n, bytes, evicted)
	}
}

// A session whose profile no longer shows the call's group (a reload
// changed it) is told its kept result does not exist.
func TestMaxResultProfileLosesGroup(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	groupG := fmt.Sprintf("  g:\n    description: other\n    command: %q\n", fakeBin)
	h, yaml := largeHub(t, config.ModeFlat, "max_result: 20KB", groupG+"profiles:\n  p: {groups: [f, g]}\n", "off")
	c := largeClient(t, h, "a", "t", "p")
	link := cut(t, c.callLarge(1, config.ModeFlat, "text", 100000), 20000).link()
	if a := c.rpc(2, "resources/read", fmt.Sprintf(`{"uri":%q}`, link)); a.Error != nil {
		t.Fatalf("read: %s", a.line)
	}
	cfg, err := config.Parse("test.yaml", strings.NewReader(strings.Replace(yaml, "p: {groups: [f, g]}", "p: {groups: [g]}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	h.SetConfig(cfg)
	if a := c.rpc(3, "resources/read", fmt.Sprintf(`{"uri":%q}`, link)); a.Error == nil || a.Error.Code != codeResourceNotFound {
		t.Errorf("read once the profile hides the group: %.300s", a.line)
	}
}
