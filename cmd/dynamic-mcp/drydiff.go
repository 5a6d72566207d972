package main

import (
	"bytes"
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk of the dry run's diff
// shows before and after a change, as diff -u does.
const diffContext = 3

// dryRunDiff is what install --dry-run prints of a client's file about to
// change from old to new, new being the bytes the install writes: a
// unified diff. A JSON file written on one line (minified) shows that
// line removed and the lines written in its place, the new server list
// indented as the install writes it. A secret written literally in the
// file is masked on every line the diff shows, found by where it is in
// the file (maskedLines).
func dryRunDiff(name string, old, new []byte) string {
	return unifiedDiff(name, "after install", old, new)
}

// unifiedDiff is a unified diff of the texts a and b, b labelled label:
// hunks of the changed lines with diffContext lines around them, each
// headed by where it is (@@ -line,count +line,count @@), as diff -u
// prints them.
func unifiedDiff(name, label string, a, b []byte) string {
	ops := diffLines(splitLines(a), splitLines(b))
	// The lines shown, masked: the same lines, one for one. A secret of
	// either file is masked in both.
	texts := secretTexts(a, b)
	shown := [2][]string{maskedLines(a, texts), maskedLines(b, texts)}
	// at[k] is the line of a and the line of b that ops[k] comes after.
	at := make([][2]int, len(ops)+1)
	for k, op := range ops {
		at[k+1] = at[k]
		if op.kind != '+' {
			at[k+1][0]++
		}
		if op.kind != '-' {
			at[k+1][1]++
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s (%s)\n", name, name, label)
	for k := 0; k < len(ops); {
		first := k
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		// The hunk runs on while no more than twice the context of
		// unchanged lines separates one change from the next.
		end := first
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			same := end
			for same < len(ops) && ops[same].kind == ' ' {
				same++
			}
			if same == len(ops) || same-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = same
		}
		start := max(first-diffContext, k)
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(at[start][0], at[end][0]), hunkRange(at[start][1], at[end][1]))
		for i, op := range ops[start:end] {
			side := 0 // the line of a, or of b when only b has it
			if op.kind == '+' {
				side = 1
			}
			fmt.Fprintf(&out, "%c%s\n", op.kind, shown[side][at[start+i][side]])
		}
		k = end
	}
	return out.String()
}

// hunkRange is a hunk's lines from after line from to line to, as diff -u
// writes them: "start,count", "start" for one line, and for none the
// line they come after.
func hunkRange(from, to int) string {
	switch to - from {
	case 0:
		return fmt.Sprintf("%d,0", from)
	case 1:
		return fmt.Sprint(from + 1)
	}
	return fmt.Sprintf("%d,%d", from+1, to-from)
}

// diffOp is one line of a diff: ' ' in both texts, '-' in the first
// only, '+' in the second only.
type diffOp struct {
	kind byte
	line string
}

// diffLines is the diff of x and y by their longest common subsequence.
// The lines both start and end with are left out of its table, which
// takes len(x)*len(y): a client's file changes in one place, its server
// list, and Claude Code's ~/.claude.json runs to thousands of lines.
func diffLines(x, y []string) []diffOp {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(x)+len(y)-pre-suf)
	for _, l := range x[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	lcs := make([][]int, len(mx)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(my)+1)
	}
	for i := len(mx) - 1; i >= 0; i-- {
		for j := len(my) - 1; j >= 0; j-- {
			if mx[i] == my[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(mx) || j < len(my) {
		switch {
		case i < len(mx) && j < len(my) && mx[i] == my[j]:
			ops = append(ops, diffOp{' ', mx[i]})
			i, j = i+1, j+1
		case i < len(mx) && (j == len(my) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', mx[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', my[j]})
			j++
		}
	}
	for _, l := range x[len(x)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

func splitLines(b []byte) []string {
	s := string(bytes.TrimSuffix(b, []byte("\n")))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
