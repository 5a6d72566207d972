package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// dockerStage is one FROM ... AS name stage of the Dockerfile, its
// instructions in order: keyword and the rest of the line, with
// continuation lines joined.
type dockerStage struct {
	from, name string
	lines      [][2]string
}

// readDockerfile reads the repository's Dockerfile, minimally: comments
// and blank lines dropped, continuations joined, instructions grouped by
// stage.
func readDockerfile(t *testing.T) []*dockerStage {
	t.Helper()
	f, err := os.Open(filepath.Join(repoDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []*dockerStage
	var pending string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending += cont + " "
			continue
		}
		line, pending = pending+line, ""
		keyword, rest, _ := strings.Cut(line, " ")
		keyword, rest = strings.ToUpper(keyword), strings.TrimSpace(rest)
		if keyword == "FROM" {
			f := strings.Fields(rest)
			s := &dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before FROM", keyword)
		}
		s := stages[len(stages)-1]
		s.lines = append(s.lines, [2]string{keyword, rest})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// get is the argument of every instruction keyword of s.
func (s *dockerStage) get(keyword string) []string {
	var out []string
	for _, l := range s.lines {
		if l[0] == keyword {
			out = append(out, l[1])
		}
	}
	return out
}

// execForm is an instruction's exec form (a JSON list).
func execForm(t *testing.T, what, arg string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(arg), &v); err != nil || len(v) == 0 {
		t.Fatalf("Dockerfile: %s %s: not a JSON list (%v)", what, arg, err)
	}
	return v
}

// TestDockerfile reads the Dockerfile (no container engine runs where
// these tests do) and runs what it says outside a container: its build
// stage's go build, as written but for the output path, must build a
// static binary with CGO_ENABLED=0; each runtime stage must put that
// binary on PATH as its ENTRYPOINT names it, and its ENTRYPOINT and CMD,
// with the stage's ENV, must serve HTTP (on a loopback port and a test
// config instead of the CMD's) on the port EXPOSE names, logging JSON,
// with /readyz answering.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	stages := readDockerfile(t)
	byName := map[string]*dockerStage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	build := byName["build"]
	if build == nil || !strings.HasPrefix(build.from, "golang:1.26") {
		t.Fatalf("Dockerfile: want a build stage FROM golang:1.26, got %+v", build)
	}
	var buildCmd []string
	for _, r := range build.get("RUN") {
		if strings.Contains(r, "go build") {
			buildCmd = shellWords(t, r)
		}
	}
	if buildCmd == nil {
		t.Fatal("Dockerfile: no RUN go build in the build stage")
	}
	var env []string
	for len(buildCmd) > 0 && strings.Contains(buildCmd[0], "=") {
		env, buildCmd = append(env, buildCmd[0]), buildCmd[1:]
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("Dockerfile: the build command does not set CGO_ENABLED=0: %v", env)
	}
	out := slices.Index(buildCmd, "-o")
	if len(buildCmd) < 2 || buildCmd[0] != "go" || buildCmd[1] != "build" || out < 0 || out+1 >= len(buildCmd) {
		t.Fatalf("Dockerfile: want go build ... -o FILE ..., got %q", buildCmd)
	}
	builtAs := buildCmd[out+1]
	bin := filepath.Join(t.TempDir(), "dynamic-mcp")
	buildCmd[out+1] = bin
	cmd := exec.Command(buildCmd[0], buildCmd[1:]...)
	cmd.Dir = repoDir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's %q: %v\n%s", buildCmd, err, b)
	}
	if f, err := elf.Open(bin); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the Dockerfile's build is not static: it names a dynamic loader")
			}
		}
		f.Close()
	}

	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "groups:\n  f: { description: fake, command: %q }\n", fakeBin), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hub", "with-node"} {
		t.Run(name, func(t *testing.T) {
			s := byName[name]
			if s == nil {
				t.Fatalf("Dockerfile: no stage %q", name)
			}
			if name == "hub" && stages[len(stages)-1] != s {
				t.Error("Dockerfile: the hub stage must be the last, the default target")
			}
			entry := execForm(t, "ENTRYPOINT", lastOf(t, s, "ENTRYPOINT"))
			args := execForm(t, "CMD", lastOf(t, s, "CMD"))
			if !slices.Contains(s.get("COPY"), "--from=build "+builtAs+" /usr/local/bin/"+entry[0]) {
				t.Errorf("Dockerfile: stage %s does not copy %s to /usr/local/bin/%s: %q", name, builtAs, entry[0], s.get("COPY"))
			}
			if u := lastOf(t, s, "USER"); u == "" || u == "root" || strings.HasPrefix(u, "0") {
				t.Errorf("Dockerfile: stage %s runs as %q, want a non-root user", name, u)
			}
			// The CMD's listen address must be reachable from outside the
			// container (a bare port is loopback) and be the port EXPOSE says.
			i := slices.Index(args, "--http")
			if i < 0 || i+1 >= len(args) || slices.Index(args, "-c") < 0 {
				t.Fatalf("Dockerfile: CMD %q has no --http ADDR and -c FILE", args)
			}
			if host, port, _ := strings.Cut(args[i+1], ":"); host != "0.0.0.0" || !slices.Contains(s.get("EXPOSE"), port) {
				t.Errorf("Dockerfile: CMD listens on %q, want 0.0.0.0 and a port EXPOSE names (%q)", args[i+1], s.get("EXPOSE"))
			}
			listen := args[i+1]
			args = slices.Clone(args)
			args[i+1] = "127.0.0.1:0"
			args[slices.Index(args, "-c")+1] = cfg
			// The tests' environment says text logs (see runTests), as a
			// terminal would make auto tint: the image's ENV must say json.
			env := []string{"DYNAMIC_MCP_TOKEN=" + testToken, "DYNAMIC_MCP_HOME=" + t.TempDir(), logFormatEnvVar + "=" + logFormatText}
			for _, e := range s.get("ENV") {
				for _, kv := range strings.Fields(e) {
					if k, _, _ := strings.Cut(kv, "="); k != "DYNAMIC_MCP_HOME" { // a directory of the image
						env = append(env, kv)
					}
				}
			}
			stderr := &lockedBuffer{}
			hub := exec.Command(bin, append(entry[1:], args...)...)
			hub.Env = append(os.Environ(), env...)
			hub.Stderr = stderr
			if err := hub.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				hub.Process.Signal(os.Interrupt)
				hub.Wait()
				if t.Failed() {
					t.Logf("stderr of %s:\n%s", path.Base(bin), stderr)
				}
			}()
			var rec struct{ Msg, Addr string }
			await.Costly(t, 10*time.Second, "the hub to log that it serves, in JSON", func() bool {
				lines := strings.Split(stderr.String(), "\n")
				for _, l := range lines[:len(lines)-1] { // whole lines
					// Besides its logs the hub prints where the inspector is,
					// with its token (docs/teams.md).
					if strings.HasPrefix(l, "dynamic-mcp: the inspector is at ") || strings.HasPrefix(l, "  token for this run: ") {
						continue
					}
					if !json.Valid([]byte(l)) {
						t.Fatalf("the image's logs are not JSON: %s", l)
					}
					if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "serving over HTTP" {
						return true
					}
				}
				return false
			})
			await.Costly(t, 20*time.Second, "/readyz to answer 200", func() bool {
				resp, err := testClient.Get("http://" + rec.Addr + "/readyz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			})
			// A HEALTHCHECK's command (exec form, the port swapped for the
			// hub's) must succeed now that /readyz says ready.
			for _, h := range s.get("HEALTHCHECK") {
				_, form, ok := strings.Cut(h, "CMD ")
				if !ok {
					t.Fatalf("Dockerfile: HEALTHCHECK %s has no CMD", h)
				}
				argv := execForm(t, "HEALTHCHECK CMD", form)
				_, port, _ := strings.Cut(listen, ":")
				for j := range argv {
					argv[j] = strings.ReplaceAll(argv[j], "127.0.0.1:"+port, rec.Addr)
				}
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					t.Errorf("HEALTHCHECK %q: %v\n%s", argv, err, out)
				}
			}
		})
	}
}

// lastOf is the last instruction keyword of s, which is the one that
// counts.
func lastOf(t *testing.T, s *dockerStage, keyword string) string {
	t.Helper()
	v := s.get(keyword)
	if len(v) == 0 {
		t.Fatalf("Dockerfile: stage %s has no %s", s.name, keyword)
	}
	return v[len(v)-1]
}
