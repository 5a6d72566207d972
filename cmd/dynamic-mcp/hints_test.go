package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// Every hint the hub or a command prints is a command that works when
// pasted: with -c and the config's path (quoted: it has a space) when the
// config is not the default one, and without -c when it is. Each is split
// as a shell would and run; none fails for want of a config or as misused.
func TestHintsWorkWhenPasted(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my configs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "sign in first", http.StatusUnauthorized)
	}))
	defer locked.Close()
	path := filepath.Join(dir, "c.yaml")
	src := "mode: flat\nstate_dir: " + filepath.Join(dir, "state") + "\ngroups:\n" +
		"  rugpull: { description: changes its tools, command: " + quoteYAML(fakeBin) + " }\n" +
		"  locked: { description: needs a sign-in, url: " + quoteYAML(locked.URL+"/mcp") + ", retry: { attempts: 1 } }\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	withC := " -c '" + path + "'"

	// auth login, from status's LAST ERROR.
	out, _, _ := runCommand(t, "", "status", "-c", path)
	login := regexp.MustCompile(`run: (dynamic-mcp auth login locked[^\n]*)`).FindStringSubmatch(out)
	if login == nil || !strings.HasSuffix(strings.TrimSpace(login[1]), withC) {
		t.Fatalf("status names no auth login with -c:\n%s", out)
	}
	runHint(t, strings.TrimSpace(login[1]))

	// pin accept, from the hub's log.
	c := startProcess(t, nil, hubBin, "serve", "-c", path, "--log-level", "debug", "--log-format", "json")
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	c.callText("rugpull__mutate", nil)
	var accept string
	await.Costly(t, 10*time.Second, "the pin hint in the log", func() bool {
		for _, line := range strings.Split(c.stderr.String(), "\n") {
			var rec struct{ Accept string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Accept != "" {
				accept = rec.Accept
				return true
			}
		}
		return false
	})
	if accept != "dynamic-mcp pin accept rugpull"+withC {
		t.Errorf("pin hint %q", accept)
	}
	runHint(t, accept)
	await.Costly(t, 10*time.Second, "the accepted tool to come back", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), "rugpull__echo")
	})
}

// runHint runs the hint's command in this process, as the user would in
// a shell, and fails the test if it failed for want of a config or as a
// usage error.
func runHint(t *testing.T, hint string) {
	t.Helper()
	words := shellWords(t, hint)
	if len(words) < 2 || words[0] != "dynamic-mcp" {
		t.Fatalf("hint %q is not a dynamic-mcp command", hint)
	}
	out, errOut, code := runCommand(t, "", words[1:]...)
	if code == 2 || strings.Contains(out+errOut, "no config") {
		t.Errorf("%s: exit %d\n%s%s", hint, code, out, errOut)
	}
}

func quoteYAML(s string) string { b, _ := json.Marshal(s); return string(b) }

// shellWords splits a command line as a POSIX shell does its words:
// blanks separate, single quotes keep all, double quotes and backslashes
// as usual. It has no expansion: a hint that needs one is a bad hint.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				w.WriteByte(ch)
			}
		case quote == '"':
			switch {
			case ch == '"':
				quote = 0
			case ch == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\", line[i+1]) >= 0:
				i++
				w.WriteByte(line[i])
			case ch == '$' || ch == '`':
				t.Fatalf("%q expands %c in double quotes", line, ch)
			default:
				w.WriteByte(ch)
			}
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case strings.IndexByte("$`|&;<>()*?[]{}~#", ch) >= 0:
			t.Fatalf("%q has %c, which a shell treats specially", line, ch)
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("%q: unclosed quote", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
