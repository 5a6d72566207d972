package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// maxDownFiles and maxBackFiles bound the files of this module one flat
// tools/call from a stdio client to a stdio upstream enters: down, from
// where the hub reads it until the upstream has read it; and back, the
// whole call to its answer. They are what they were when the stages a
// config does not need were left out of its chains (the audit trail off,
// no rule with a rate, no max_result; a hop under a config that resolves
// no secret passes redaction by, one to a server without auth: per-user
// the sign-in), the 2026-07-28 statement and stage moved beside the era's
// checks (server/era), and a group that filters nothing was no longer
// looked at for a filter (down 33, back 33), and then the stages a call
// does not need passed by (call.When: progress without _meta, tasks
// without a task) and a group's decision that reads nothing of a call
// made once per snapshot (policy.Fixed): down 30, back 30, one more where
// jsonrpc's workers.go is entered, when the call starts a handler worker
// instead of reusing an idle one (52 and 59 when this test was written,
// 40 and 40 before the stages a config lacks were left out), so that a
// change that sends a call through more of the house is seen. Issue 32
// asked at most 15 down from where the hub has read the message; the
// wire library (types/jsonrpc), which reads and writes it, is 12-13 of
// them, logged apart (18 down without it, then 15 both ways once the
// contract's chain joined its Call in server/call/call.go, the request's
// dispatch joined the request in server/request.go, and the stdio face
// handed its connection the session's methods, no closure of its own
// between). The argument check is one file on it (server/validateargs's
// check.go: the stage's work for a call and the quick check of the
// arguments' bytes; compiling a schema, once, and wording the answer to
// arguments that do not fit are validateargs.go's): 15 before, 16 with
// the trail on.
//
// The bounds are on the hub's own files (maxHubFiles, both ways) and the
// wire library's apart (maxWireFiles): which of the wire library's files
// a call enters depends on the scheduler too (a handler worker started
// rather than reused, a write queued behind another rather than made at
// once), so that a loaded machine entered one or two more and a bound on
// the sum failed there; the hub's path does not.
//
// The wire library is types/jsonrpc and, since a hub's stdio reads and
// writes are raw system calls (issue 33), types/rawio, which jsonrpc
// calls for them: one file more of the reading and the writing, not of
// the hub's path.
//
// Under the default config the audit trail is on, and a call enters its
// one file on the path (maxHubFilesAudit, both ways): server/audit's
// trail.go, where the request holds the trail, the call is admitted, and
// its record is built, bounded and handed to the trail's writer (17 down
// and 18 back before, when the record was built across three files: the
// stage's, the record's and the trail's). Writing the line to disk is the
// writer's, a goroutine of its own (server/audit's file.go, and the file
// lock, types/filelock): the call does not wait for it, and it is not the
// call's path. It ran in some measures, before their counters were
// written, as the scheduler had it (20 back then): callfiles now counts
// the goroutines that carry the call, taking a measure the writer ran in
// again, and starts each once the writer has written the calls' before
// it and is idle (down, its work for the call before was counted as this
// one's: 19 instead of 17).
const (
	maxHubFiles      = 14
	maxHubFilesAudit = 15
	maxWireFiles     = 15
)

// One call crosses few files: the chain keeps each concern one stage, so
// a call does not wander through the house. Measured by coverage:
// testdata/callfiles, built with -cover, clears the counters after two
// warm-up calls, makes a call and writes the counters, three times for
// each measure; the files whose counters moved in all three are the
// call's. With the trail on, a measure in which the trail's writer ran
// is taken again: what is counted is the goroutines that carry the call.
func TestOneCallEntersFewFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with -cover")
	}
	// The build starts before t.Parallel, so that it runs while the
	// package's serial tests do: a parallel test resumes only once every
	// serial one has ended, and this build (a link of the whole module
	// with coverage, and its compile in a fresh clone) was the package's
	// last minutes, alone, on a busy machine. It is kept between runs
	// (fakeupstream.BuildProgram): the link, 5-7 s of CPU, is made again
	// only when the sources changed.
	type built struct {
		bin string
		err error
	}
	building := make(chan built, 1)
	go func() {
		bin, err := fakeupstream.BuildProgram("callfiles", "-cover", "-covermode=atomic", "-coverpkg=github.com/dynamic-mcp/dynamic-mcp/...",
			"github.com/dynamic-mcp/dynamic-mcp/testdata/callfiles")
		building <- built{bin, err}
	}()
	t.Parallel() // a program of its own, built and run
	b := <-building
	if b.err != nil {
		t.Fatalf("go build -cover: %v", b.err)
	}
	bin := b.bin
	// covdata's own program, run directly: `go tool covdata` looks its
	// build up at each run, 0.2 s of CPU (0.3-2.5 s on a loaded machine)
	// for each of the twelve conversions below, where the program takes
	// a few milliseconds.
	where, err := exec.Command("go", "tool", "-n", "covdata").Output()
	if err != nil {
		t.Fatalf("go tool -n covdata: %v", err)
	}
	covdata := string(bytes.TrimSpace(where))
	for _, cf := range []struct {
		name    string
		arg     string // callfiles' second argument
		maxHub  map[string]int
		explain string
	}{
		{"audit off", "off", map[string]int{"down": maxHubFiles, "back": maxHubFiles}, "the stages a config does not need left out"},
		{"default config", "default", map[string]int{"down": maxHubFilesAudit, "back": maxHubFilesAudit}, "the audit trail on, as by default"},
	} {
		dir := t.TempDir()
		run := exec.Command(bin, dir, cf.arg)
		// The program and the upstream it starts write their whole counters at
		// exit to GOCOVERDIR: not the measured calls'.
		run.Env = append(os.Environ(), "GOCOVERDIR="+t.TempDir())
		out, err := run.CombinedOutput()
		if err != nil {
			t.Fatalf("callfiles (%s): %v\n%s", cf.name, err, out)
		}
		t.Logf("callfiles (%s): %s", cf.name, bytes.TrimSpace(out))
		for _, m := range []string{"down", "back"} {
			var files []string
			for i, id := range []string{"1", "2", "3"} {
				text := filepath.Join(t.TempDir(), "cover.txt")
				if out, err := exec.Command(covdata, "textfmt", "-i", filepath.Join(dir, m, id), "-o", text).CombinedOutput(); err != nil {
					t.Fatalf("covdata: %v\n%s", err, out)
				}
				entered := enteredFiles(t, text)
				if i == 0 {
					files = entered
				}
				files = slices.DeleteFunc(files, func(f string) bool { return !slices.Contains(entered, f) })
			}
			t.Logf("%s (%s): one tools/call, stdio to stdio, %s, enters %d files:\n%s", cf.name, cf.explain, m, len(files), strings.Join(files, "\n"))
			// The trace starts where the hub has read the message: the
			// wire library's files are the reading and the writing, down to
			// the system call (types/rawio).
			hub := slices.DeleteFunc(slices.Clone(files), isWire)
			t.Logf("%s, %s: %d files, %d without the wire library (types/jsonrpc, types/rawio)", cf.name, m, len(files), len(hub))
			if len(files) < 5 {
				t.Fatalf("%s, %s: only %d files counted: the measurement is broken", cf.name, m, len(files))
			}
			if bound := cf.maxHub[m]; len(hub) > bound {
				t.Errorf("%s: one call enters %d of the hub's files %s (without the wire library), more than %d", cf.name, len(hub), m, bound)
			}
			if wire := len(files) - len(hub); wire > maxWireFiles {
				t.Errorf("%s: one call enters %d files of the wire library %s, more than %d", cf.name, wire, m, maxWireFiles)
			}
		}
	}
}

// isWire says whether f is the wire library's: types/jsonrpc, which reads
// and writes the messages, and types/rawio, its reads and writes at the
// system call.
func isWire(f string) bool {
	return strings.HasPrefix(f, "types/jsonrpc/") || strings.HasPrefix(f, "types/rawio/")
}

// enteredFiles reads a textfmt coverage profile and returns the files with
// a block counted at least once, without the module's prefix.
func enteredFiles(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		var file string
		var n int
		name, rest, _ := strings.Cut(line, ":")
		if _, err := fmt.Sscanf(rest[strings.LastIndex(rest, " ")+1:], "%d", &n); err != nil {
			t.Fatalf("profile line %q: %v", line, err)
		}
		file = strings.TrimPrefix(name, "github.com/dynamic-mcp/dynamic-mcp/")
		if n > 0 && !strings.HasPrefix(file, "testdata/") {
			seen[file] = true
		}
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	slices.Sort(files)
	return files
}
