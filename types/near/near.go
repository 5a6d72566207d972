// Package near finds the word a mistyped one most likely meant: the edit
// distance the config's "did you mean" and the hub's unknown tool answers
// both judge closeness by, and the closest names among many, at a bounded
// cost for a name a client sent.
package near

import (
	"cmp"
	"iter"
	"slices"
	"strings"
	"unicode"
)

// Distance is the optimal string alignment distance between a and b:
// how many letters must be inserted, deleted, substituted or swapped with
// their neighbour to turn one into the other.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	return within(ra, rb, max(len(ra), len(rb)), nil)
}

// within is Distance(a, b) when it is at most limit, else limit+1: only
// the cells of the table within limit of its diagonal are computed, and
// it stops at a row whose every cell is above limit, so its cost is
// len(a) times 2*limit+1 cells at most. rows is its table's room when it
// holds 3*(len(b)+1) cells (Names passes one for all its comparisons).
func within(a, b []rune, limit int, rows []int) int {
	n, m := len(a), len(b)
	over := limit + 1
	if max(n-m, m-n) > limit {
		return over
	}
	// prev2, prev and cur are the rows i-2, i-1 and i of the table whose
	// cell [i][j] is the distance between a[:i] and b[:j]; in each, the
	// cells just outside the band hold over, as every cell beyond would.
	if len(rows) < 3*(m+1) {
		rows = make([]int, 3*(m+1))
	}
	rows = rows[:3*(m+1)]
	clear(rows)
	prev2, prev, cur := rows[:m+1], rows[m+1:2*(m+1)], rows[2*(m+1):]
	for j := 0; j <= min(m, limit); j++ {
		prev[j] = j
	}
	if limit+1 <= m {
		prev[limit+1] = over
	}
	for i := 1; i <= n; i++ {
		lo, hi := max(1, i-limit), min(m, i+limit)
		cur[lo-1] = over
		if lo == 1 && i <= limit {
			cur[0] = i
		}
		if hi+1 <= m {
			cur[hi+1] = over
		}
		least := over
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			c := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				c = min(c, prev2[j-2]+1)
			}
			cur[j] = min(c, over)
			least = min(least, cur[j])
		}
		if least > limit && (lo > 1 || cur[0] > limit) {
			return over
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[m], over)
}

// MaxName bounds the names Names compares, in bytes: the longest tool
// name MCP allows. A longer name is no tool's, nor close to one, and is
// not compared at all: the name is what a client sent.
const MaxName = 128

// minPrefix is how long a name must be, folded, to be close to every
// name it begins (or that begins it): "read" finds read_file, "re" nothing.
const minPrefix = 4

// Names are at most n of names close to name, the closest first (ties in
// sorted order, so the answer does not depend on a map's order): the same
// letters but for case, '_' and '-'; or, so compared, within an edit
// distance of one (two for a name of six letters or more); or beginning
// with name, or begun by it, either of minPrefix letters or more. The
// cost is bounded: a name longer than MaxName is compared with none, and
// only a name of about its length is compared letter by letter.
func Names(name string, names iter.Seq[string], n int) []string {
	if n <= 0 || name == "" || len(name) > MaxName {
		return nil
	}
	keyRunes := fold(nil, name)
	keyLen := len(keyRunes)
	limit := max(1, min(2, keyLen/3))
	type hit struct {
		name string
		dist int
	}
	var hits []hit
	var cr []rune                           // c's letters, folded, and the table: one buffer each for every c
	rows := make([]int, 3*(keyLen+limit+1)) // for any c within limit of name's length
	for c := range names {
		if len(c) > 4*MaxName {
			continue // no tool's name: not worth folding
		}
		cr = fold(cr[:0], c)
		cLen := len(cr)
		gap := max(keyLen-cLen, cLen-keyLen)
		switch {
		case min(keyLen, cLen) >= minPrefix && (hasPrefix(cr, keyRunes) || hasPrefix(keyRunes, cr)):
			hits = append(hits, hit{c, gap})
		case gap <= limit:
			if d := within(keyRunes, cr, limit, rows); d <= limit {
				hits = append(hits, hit{c, d})
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(a.dist, b.dist), strings.Compare(a.name, b.name)) })
	out := make([]string, 0, min(n, len(hits)))
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.name)
	}
	return out
}

// fold appends to buf the letters of s as Names compares them: lower
// case, without '_' and '-'.
func fold(buf []rune, s string) []rune {
	for _, r := range s {
		if r != '_' && r != '-' {
			buf = append(buf, unicode.ToLower(r))
		}
	}
	return buf
}

// hasPrefix reports whether s begins with prefix.
func hasPrefix(s, prefix []rune) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}
