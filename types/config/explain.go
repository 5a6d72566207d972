package config

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/dynamic-mcp/dynamic-mcp/types/near"
)

// Nearest is the known word a mistyped one most likely meant, or "" when
// none is close, as nearest judges keys (the command line's suggestion).
func Nearest(word string, known []string) string { return nearest(word, known) }

// nearest is the known key a mistyped key most likely meant, or "" when
// none is close: the same letters but for case, '_' and '-', or within
// an edit distance (a letter added, dropped, changed or two swapped) of
// one, two for a key of six letters or more. Ties go to the first in sorted
// order, so the suggestion does not depend on a map's order.
func nearest(key string, known []string) string {
	known = slices.Sorted(slices.Values(known))
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	for _, k := range known {
		if norm(k) == norm(key) || aliases[norm(key)] == k {
			return k
		}
	}
	best, bestDist := "", max(1, min(2, len(key)/3))
	for _, k := range known {
		if d := near.Distance(strings.ToLower(key), k); d <= bestDist && (best == "" || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

// aliases are what other MCP configs (the clients' JSON, VS Code's, the
// original dynamic-mcp's) call some keys, normalized as nearest does: a
// config moved by hand gets the right name, not the nearest spelling.
var aliases = map[string]string{
	"cmd":              "command",
	"environment":      "env",
	"workingdirectory": "cwd",
	"workingdir":       "cwd",
	"workdir":          "cwd",
	"type":             "transport",
	"httpurl":          "url",
	"serverurl":        "url",
	"mcpservers":       "groups",
	"desc":             "description",
}

// yamlErrorText is yaml.v3's syntax error: "yaml: line 4: mapping values
// are not allowed in this context", with or without the line.
// Compiled at first use, not at every start.
var yamlErrorText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (?:line (\d+): )?`) })

// maxLocatedLines bounds the files whose syntax errors syntaxError locates
// by parsing each prefix: config files are short, and an error is rare.
const maxLocatedLines = 5000

// syntaxError explains a YAML syntax error in data and finds its line.
//
// yaml.v3 does not always say where: it names no line for a problem on the
// first line, an unknown anchor or a control character, and for a problem
// inside a flow collection ([...] or {...}) it names the line before the
// collection's start (a 0-based line). So the line is found by parsing
// ever longer prefixes of the file: the first prefix that fails the same
// way ends on the line where the problem is, or where the unclosed
// collection or quote that causes it starts.
func syntaxError(data []byte, err error) (int, error) {
	msg := yamlErrorText().ReplaceAllString(err.Error(), "")
	said := 0 // the line yaml.v3 named: the problem's, or just before it
	if m := yamlErrorText().FindStringSubmatch(err.Error()); m != nil && m[1] != "" {
		said, _ = strconv.Atoi(m[1])
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	line := 0
	if len(lines) <= maxLocatedLines {
		prefix := 0
		for i, l := range lines {
			prefix += len(l)
			if i+1 < said-1 {
				continue
			}
			var doc yaml.Node
			perr := yaml.Unmarshal(data[:prefix], &doc)
			if perr != nil && yamlErrorText().ReplaceAllString(perr.Error(), "") == msg {
				line = i + 1
				break
			}
		}
	}
	if line == 0 { // not found: take yaml.v3's word for it
		line = said
	}
	text := "invalid YAML: " + msg
	if line > 0 && line <= len(lines) {
		l := string(lines[line-1])
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		switch {
		case strings.Contains(indent, "\t") || strings.Contains(msg, "tab character"):
			text += " (indent with spaces: YAML does not allow tabs there)"
		case strings.Contains(msg, "mapping values are not allowed"):
			text += ` (quote a value that holds ": ", or check the indentation)`
		case indentationError(msg):
			text += " (check the indentation: the keys of one map, and the items of one list, start in the same column)"
		}
	}
	return line, errors.New(text)
}

// indentationError reports whether yaml.v3's message is one that a line
// indented too far or not far enough causes.
func indentationError(msg string) bool {
	for _, m := range []string{"did not find expected key", "did not find expected '-' indicator", "block sequence entries are not allowed", "mapping keys are not allowed"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
