package near

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"mode", "mode", 0},
		{"mdoe", "mode", 1}, {"setings", "settings", 1}, {"kitten", "sitting", 3}, {"é", "e", 1},
		{"ca", "abc", 3}, {"abcdef", "badcfe", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// within agrees with the whole table wherever the distance is within its
// limit, and says over where it is not.
func TestWithinMatchesDistance(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() []rune {
		w := make([]rune, r.IntN(9))
		for i := range w {
			w[i] = rune('a' + r.IntN(3))
		}
		return w
	}
	for range 20000 {
		a, b, limit := word(), word(), r.IntN(4)
		if got, want := within(a, b, limit, nil), min(Distance(string(a), string(b)), limit+1); got != want {
			t.Fatalf("within(%q, %q, %d) = %d, want %d", string(a), string(b), limit, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	tools := []string{"read_graph", "read_file", "write_file", "search_nodes", "open_nodes", "browser_navigate", "browser_navigate_back", "ls", "ps"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"read_grap", []string{"read_graph"}},
		{"raed_graph", []string{"read_graph"}},
		{"readGraph", []string{"read_graph"}},
		{"READ-FILE", []string{"read_file"}},
		{"write_files", []string{"write_file"}},
		{"read", []string{"read_file", "read_graph"}},
		{"browser_nav", []string{"browser_navigate", "browser_navigate_back"}},
		{"search_node_list", nil},
		{"delete_entities", nil},
		{"xyz", nil},
		{"", nil},
		{"ks", []string{"ls", "ps"}}, // one letter off each
		{"rm", nil},
		{strings.Repeat("read_graph", 20), nil},
	} {
		if got := Names(tc.name, slices.Values(tools), 3); !slices.Equal(got, tc.want) {
			t.Errorf("Names(%.20q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Names("read", slices.Values(tools), 1); !slices.Equal(got, []string{"read_file"}) {
		t.Errorf("Names capped at 1 = %q", got)
	}
	if got := Names("read_grap", slices.Values(tools), 0); got != nil {
		t.Errorf("Names capped at 0 = %q", got)
	}
}

// A name at MaxName against many tools of about its length stays cheap:
// each comparison is one table of MaxName squared cells at most.
func BenchmarkNames(b *testing.B) {
	tools := make([]string, 500)
	for i := range tools {
		tools[i] = strings.Repeat("x", MaxName-2) + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	for _, name := range []string{strings.Repeat("y", MaxName), strings.Repeat("x", MaxName-2) + "zz"} {
		b.Run(name[MaxName-3:], func(b *testing.B) {
			for b.Loop() {
				Names(name, slices.Values(tools), 3)
			}
		})
	}
}
