package view

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// The index is built by the first search of a view, not with the view on
// the hub's event loop: 1,000 tools cost about 70 ms, 5,000 about 300 ms,
// for every change of any upstream.
func TestSearchIndexBuiltOnFirstSearch(t *testing.T) {
	g := &GroupView{Name: "g", Description: "a group", State: upstream.StateReady}
	for i := range config.SearchAutoTools + 1 {
		g.Tools = append(g.Tools, json.RawMessage(fmt.Sprintf(`{"name":"tool_%d","description":"Does thing %d"}`, i, i)))
	}
	ti := buildToolIndex([]*GroupView{g}, config.SearchAuto)
	if ti == nil || ti.Built() {
		t.Fatalf("buildToolIndex: %v, built %v", ti, ti != nil && ti.Built())
	}
	v := &View{Search: ti}
	var wg sync.WaitGroup
	for range 4 { // searches that come together share one build (run with -race)
		wg.Go(func() {
			text := string(v.SearchDynamicTools(DynamicArgs{Query: json.RawMessage(`"tool_7"`)}))
			if !strings.Contains(text, `\"name\":\"tool_7\"`) {
				t.Errorf("search: %s", text)
			}
		})
	}
	wg.Wait()
	if !ti.Built() {
		t.Error("not built after a search")
	}
	if ti := buildToolIndex([]*GroupView{g}, config.SearchOff); ti != nil {
		t.Error("search: off gathered the tools")
	}
}

// BenchmarkSearchIndex5000 is what a view of 5,000 tools (the corpus of
// testdata/search copied) costs the hub's event loop for search, built
// again on every change of any upstream ("view"), against the first
// search of that view, which builds the index ("first-search").
func BenchmarkSearchIndex5000(b *testing.B) {
	dir := filepath.Join("..", "..", "testdata", "search")
	var groups []struct{ Group, Description string }
	read := func(name string, v any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			b.Fatal(err)
		}
	}
	read("groups.json", &groups)
	var views []*GroupView
	for n, copy := 0, 0; n < 5000; copy++ {
		for _, g := range groups {
			var list struct{ Tools []json.RawMessage }
			read(g.Group+".json", &list)
			gv := &GroupView{Name: fmt.Sprintf("%s-%d", g.Group, copy), Description: g.Description, State: upstream.StateReady}
			gv.Tools = list.Tools[:min(len(list.Tools), 5000-n)]
			n += len(gv.Tools)
			views = append(views, gv)
		}
	}
	b.Run("view", func(b *testing.B) {
		for b.Loop() {
			buildToolIndex(views, config.SearchOn)
		}
	})
	b.Run("first-search", func(b *testing.B) {
		for b.Loop() {
			buildToolIndex(views, config.SearchOn).get().Search("read a file", "", SearchLimit)
		}
	})
}
