// Package docs holds the user documentation (Markdown pages, one per topic)
// and the test that keeps it honest: every relative link and #anchor of
// README.md and docs/*.md resolves, the README stays one screen of a desktop
// user, and its test command is the one CI runs.
package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is the README's budget: the first screen of a desktop user,
// with reference in docs/ (STYLE.md rule 18).
const readmeMaxLines = 300

var (
	// link is an inline Markdown link or image: [text](target), the text
	// possibly over several lines; a title after the target is not used here.
	link = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	// codeSpan is inline code, where brackets are not links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// testFunc is a Go test function's name, which belongs in the code, not
	// in a user's docs.
	testFunc = regexp.MustCompile(`\bTest[A-Z]\w+`)
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// doc is one Markdown file: its prose (fenced code blocks blanked, line
// count kept) and the anchors of its headings.
type doc struct {
	path    string
	lines   int
	prose   string
	anchors map[string]bool
}

func readDoc(t *testing.T, path string) *doc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &doc{path: path, anchors: map[string]bool{}}
	seen := map[string]int{}
	var prose []string
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		d.lines++
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			prose = append(prose, "")
			continue
		}
		if fenced {
			prose = append(prose, "")
			continue
		}
		prose = append(prose, line)
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				d.anchors[s+"-"+strconv.Itoa(n)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
	}
	d.prose = strings.Join(prose, "\n")
	return d
}

// slug is GitHub's anchor for a heading: lowercase, every character but
// letters, digits, spaces, '-' and '_' removed, spaces turned into '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// docs reads README.md and docs/*.md from the repository root.
func docs(t *testing.T, root string) map[string]*doc {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(root, "README.md"))
	out := map[string]*doc{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		out[abs] = readDoc(t, abs)
	}
	return out
}

// brokenLinks lists every relative link of the docs whose file does not
// exist, or whose #anchor is no heading of the Markdown file it names.
func brokenLinks(t *testing.T, all map[string]*doc) []string {
	t.Helper()
	var broken []string
	for path, d := range all {
		text := codeSpan.ReplaceAllStringFunc(d.prose, func(s string) string {
			if strings.Contains(s, "](") {
				return ""
			}
			return s
		})
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			to := path
			if file != "" {
				to = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
				if _, err := os.Stat(to); err != nil {
					broken = append(broken, rel(path)+": "+target+": no such file")
					continue
				}
			}
			if anchor == "" {
				continue
			}
			dest, ok := all[to]
			if !ok {
				if !strings.HasSuffix(to, ".md") {
					continue // an anchor into a file that is not a doc is not checked
				}
				dest = readDoc(t, to)
				all[to] = dest
			}
			if !dest.anchors[anchor] {
				broken = append(broken, rel(path)+": "+target+": no heading with that anchor")
			}
		}
	}
	return broken
}

func rel(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(filepath.Dir(wd), path); err == nil {
			return r
		}
	}
	return path
}

func TestDocLinksResolve(t *testing.T) {
	for _, b := range brokenLinks(t, docs(t, "..")) {
		t.Error(b)
	}
}

// TestDocLinkCheckFindsBrokenLinks holds the check itself to account: a
// page with a missing file, a missing anchor and a good link.
func TestDocLinkCheckFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# R\n\nSee [a](docs/a.md#the-hubs-environment), [b](docs/a.md#nowhere),\n[c](docs/missing.md) and `[d](nothing.md)`.\n\n```\n[e](also-nothing.md)\n```\n")
	write("docs/a.md", "# A\n\nWhat a is for.\n\n## The hub's environment\n")
	got := brokenLinks(t, docs(t, dir))
	if len(got) != 2 {
		t.Fatalf("broken links found: %q, want the missing anchor and the missing file", got)
	}
}

func TestReadmeFitsOnAScreen(t *testing.T) {
	d := readDoc(t, filepath.Join("..", "README.md"))
	if d.lines >= readmeMaxLines {
		t.Errorf("README.md has %d lines, want under %d: move reference into docs/", d.lines, readmeMaxLines)
	}
}

// TestDocsNameNoTestFunction: a user reads what the hub does, not which
// test shows it.
func TestDocsNameNoTestFunction(t *testing.T) {
	for path, d := range docs(t, "..") {
		for i, line := range strings.Split(d.prose, "\n") {
			if m := testFunc.FindString(line); m != "" {
				t.Errorf("%s:%d names the test function %s", rel(path), i+1, m)
			}
		}
	}
}

// TestDocPagesSayWhatTheyAreFor: each page of docs/ opens with its title
// and a sentence that says what it is for.
func TestDocPagesSayWhatTheyAreFor(t *testing.T) {
	paths, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(b), "\n", 4)
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || lines[1] != "" || lines[2] == "" || strings.HasPrefix(lines[2], "#") {
			t.Errorf("docs/%s: want a title, a blank line, then a sentence saying what the page is for", p)
		}
	}
}

// TestReadmeTestCommandIsCIs: the README's one command for the whole test
// suite is the one .ci/run runs, byte for byte.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.Contains(line, "go test ") && strings.HasPrefix(line, "npm install ") {
			cmd = line
		}
	}
	if cmd == "" {
		t.Fatal(".ci/run has no line that installs the npm packages and runs go test")
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "\n"+cmd+"\n") {
		t.Errorf("README.md does not give .ci/run's test command on a line of its own:\n%s", cmd)
	}
}
