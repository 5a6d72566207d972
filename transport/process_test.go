//go:build unix

package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// runChild starts spec, lets it run to its end and returns what it wrote
// on stdout and how it ended.
func runChild(t *testing.T, spec ProcessSpec) (string, error) {
	t.Helper()
	p, err := StartProcess(spec, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the child did not exit")
	}
	return string(out), p.ExitError()
}

// A child gets the hub's environment without the hub's own variables and
// secrets, plus its env:, which may set any name.
func TestChildEnvironment(t *testing.T) {
	t.Setenv("DYNAMIC_MCP_TOKEN", "tok-from-env")
	t.Setenv("DYNAMIC_MCP_HOME", "/srv/dmcp")
	t.Setenv("DYNAMIC_MCP_CONFIG", "/srv/dmcp/config.yaml")
	t.Setenv("dynamic_mcp_lower", "x")
	t.Setenv("COPY_OF_TOKEN", "tok-from-env")         // the same secret under another name
	t.Setenv("HUB_TOKEN", "tok-from-config")          // what http.token: ${HUB_TOKEN} named
	t.Setenv("DMCP_TEST_KEEP", "kept")                // anything else is inherited
	t.Setenv("DMCP_TEST_EMPTY", "")                   // an empty value is no secret
	t.Setenv("DMCP_TEST_OVERRIDE", "from the hub")    // env: wins over the hub's
	t.Setenv("DMCP_TEST_SUBSTRING", "tok-from-env-2") // only whole values are hidden

	out, err := runChild(t, ProcessSpec{
		Command: "sh", Args: []string{"-c", "env"},
		Hide: []string{"tok-from-config", ""},
		Env:  map[string]string{"DMCP_TEST_OVERRIDE": "from env:", "DYNAMIC_MCP_CHILD": "set by env:"},
	})
	if err == nil || err.Error() != "exited (status 0)" {
		t.Fatalf("env: %v", err)
	}
	env := strings.Split(strings.TrimSpace(out), "\n")
	for _, gone := range []string{"DYNAMIC_MCP_TOKEN=", "DYNAMIC_MCP_HOME=", "DYNAMIC_MCP_CONFIG=", "dynamic_mcp_lower=", "COPY_OF_TOKEN=", "HUB_TOKEN=", "DMCP_TEST_OVERRIDE=from the hub"} {
		if i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, gone) }); i >= 0 {
			t.Errorf("the child got %s", env[i])
		}
	}
	for _, kept := range []string{"DMCP_TEST_KEEP=kept", "DMCP_TEST_EMPTY=", "DMCP_TEST_OVERRIDE=from env:", "DYNAMIC_MCP_CHILD=set by env:", "DMCP_TEST_SUBSTRING=tok-from-env-2"} {
		if !slices.Contains(env, kept) {
			t.Errorf("the child did not get %s", kept)
		}
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Error("the child did not get PATH")
	}
}

// The error of a child that exited says why: the decisive line first,
// then every kept line, at least 20 of them.
func TestExitErrorShowsTheDecisiveStderrLines(t *testing.T) {
	// What node prints for a missing script, and more besides.
	script := `
for i in $(seq 1 30); do echo "starting step $i" >&2; done
cat >&2 <<'EOF'
node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/nowhere/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
EOF
exit 1`
	_, err := runChild(t, ProcessSpec{Command: "sh", Args: []string{"-c", script}})
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v", err)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	if first != "exited (status 1): Error: Cannot find module '/nowhere/index.js'" {
		t.Errorf("first line = %q", first)
	}
	// Blank lines are not kept; the 11 lines of node's message are, and
	// the steps before them up to 20 lines.
	if len(ee.Stderr) != 20 || ee.Stderr[0] != "starting step 22" || ee.Stderr[19] != "Node.js v20.20.2" {
		t.Errorf("kept %d lines:\n%s", len(ee.Stderr), strings.Join(ee.Stderr, "\n"))
	}
	if !strings.Contains(err.Error(), "\n  node:internal/modules/cjs/loader:1228\n    throw err;\n") {
		t.Errorf("the error does not list the kept lines:\n%s", err)
	}
}

func TestExitErrorText(t *testing.T) {
	for _, tc := range []struct {
		stderr []string
		want   string
	}{
		{nil, "exited (status 2)"},
		{[]string{"fake: cannot start"}, "exited (status 2): fake: cannot start"},
		{[]string{"listening", "bye"}, "exited (status 2): bye\n  listening\n  bye"},
		{[]string{"panic: runtime error: index out of range", "", "goroutine 1 [running]:", "main.main()"}, "exited (status 2): panic: runtime error: index out of range\n  panic: runtime error: index out of range\n  \n  goroutine 1 [running]:\n  main.main()"},
		{[]string{"Traceback (most recent call last):", `  File "srv.py", line 1, in <module>`, "ModuleNotFoundError: No module named 'mcp'"}, "exited (status 2): ModuleNotFoundError: No module named 'mcp'"},
		{[]string{"Error: boom", "    at main (/srv/index.js:3:9)"}, "exited (status 2): Error: boom"},
	} {
		got := (&ExitError{Status: "exited (status 2)", Stderr: tc.stderr}).Error()
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: got %q, want it to start with %q", tc.stderr, got, tc.want)
		}
	}
}

// Long lines bound the tail by bytes, but the newest line is always kept.
func TestStderrTailBounds(t *testing.T) {
	p := &Process{}
	long := strings.Repeat("x", maxStderrLine)
	for i := range 5 {
		p.keep(fmt.Sprintf("%d%s", i, long[1:]))
	}
	if tail := p.Tail(); len(tail) != 2 || tail[1][0] != '4' || p.tailBytes != 2*maxStderrLine {
		t.Errorf("kept %d lines, %d bytes", len(tail), p.tailBytes)
	}
	p.keep(long + long + long)
	if tail := p.Tail(); len(tail) != 1 {
		t.Errorf("kept %d lines after an over-long one", len(tail))
	}
	for i := range 100 {
		p.keep(fmt.Sprint(i))
	}
	if tail := p.Tail(); len(tail) != stderrTailLines || tail[0] != "80" || tail[19] != "99" {
		t.Errorf("kept %q", tail)
	}
}

// A child that floods stderr does not flood the hub's log: a burst of
// lines (or of bytes, for long ones) is logged, then a few a second, and
// the count of those not logged is said (at the latest when stderr ends);
// bytes that are not UTF-8 are one replacement character a run. The tail
// still has the last line.
func TestStderrFloodLogBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flood string
		lines       int64
		last        string
	}{
		{"short lines", `i=0; while [ $i -lt 5000 ]; do echo line $i; i=$((i+1)); done`, 5000, "line 4999"},
		{"long lines", `yes "$(head -c 4000 /dev/zero | tr '\0' x)" | head -n 2000`, 2000, strings.Repeat("x", 4000)},
		{"not UTF-8", `yes "$(head -c 4000 /dev/zero | tr '\0' '\377')" | head -n 2000`, 2000, strings.Repeat("\xff", 4000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log countingHandler
			start := time.Now()
			p, err := StartProcess(ProcessSpec{Command: "sh", Args: []string{"-c", tc.flood + " >&2"}}, slog.New(&log))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			select {
			case <-p.stderrDone:
			case <-time.After(time.Minute): // bounds a hang, not a timing
				t.Fatal("stderr did not end")
			}
			units := stderrLogBurst + stderrLogRate*time.Since(start).Seconds() + 1
			logged, dropped, bytes := log.stderr.Load(), log.dropped.Load(), log.bytes.Load()
			if logged+dropped != tc.lines || logged == 0 || float64(logged) > units || float64(bytes) > units*stderrLogUnit {
				t.Errorf("%d lines logged (%d bytes), %d said not logged, of %d", logged, bytes, dropped, tc.lines)
			}
			if log.invalid.Load() {
				t.Error("a line logged is not UTF-8")
			}
			if tail := p.Tail(); len(tail) == 0 || tail[len(tail)-1] != tc.last {
				t.Errorf("tail %.80q", tail)
			}
		})
	}
}

// countingHandler counts the stderr lines logged and their bytes, adds up
// the counts of those said not logged, and notes a line not UTF-8.
type countingHandler struct {
	stderr, bytes, dropped atomic.Int64
	invalid                atomic.Bool
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "line":
			h.stderr.Add(1)
			h.bytes.Add(int64(len(a.Value.String())))
			if !utf8.ValidString(a.Value.String()) {
				h.invalid.Store(true)
			}
		case "not_logged":
			h.dropped.Add(a.Value.Int64())
		}
		return true
	})
	return nil
}
