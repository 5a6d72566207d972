package search

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The public sets, with their licences, in testdata/search (see
// SOURCES.md there): mcpproxy-go's retrieval golden set (47 queries over
// the 45 tools of seven reference servers, MIT) and LiveMCPBench's
// LiveMCPTool corpus (527 tools of 70 servers, Apache 2.0), whose 489
// tools of servers not in the golden set's corpus serve as distractors.

// publicTool is a row of either set's corpus.
type publicTool struct {
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`      // mcpproxy-go
	InputSchema json.RawMessage `json:"inputSchema"` // LiveMCPBench
}

type goldenQuery struct {
	ID     string `json:"id"`
	Query  string `json:"query"`
	Labels []struct {
		ToolID    string `json:"tool_id"`
		Relevance int    `json:"relevance"`
	} `json:"labels"`
}

// publicSet is a corpus and the golden queries, each tool named
// "<server>:<tool>" as the golden set names them.
type publicSet struct {
	docs    []Doc
	ids     []string
	queries []goldenQuery
}

func (s *publicSet) add(t testing.TB, tools []publicTool) {
	t.Helper()
	for _, p := range tools {
		schema := p.Schema
		if schema == nil {
			schema = p.InputSchema
		}
		def, err := json.Marshal(map[string]any{"name": p.Tool, "description": p.Description, "inputSchema": schema})
		if err != nil {
			t.Fatal(err)
		}
		s.docs = append(s.docs, Doc{Group: p.Server, Tool: def})
		s.ids = append(s.ids, p.Server+":"+p.Tool)
	}
}

// loadPublic is the golden set over its own corpus, and with distractors
// the LiveMCPBench tools of servers its corpus does not have.
func loadPublic(t testing.TB, distractors bool) *publicSet {
	t.Helper()
	var golden struct{ Tools []publicTool }
	readJSON(t, "mcpproxy-go/corpus_v2.tools.json", &golden)
	s := &publicSet{}
	s.add(t, golden.Tools)
	var q struct{ Queries []goldenQuery }
	readJSON(t, "mcpproxy-go/retrieval_golden_v1.json", &q)
	s.queries = q.Queries
	if distractors {
		own := map[string]bool{}
		for _, g := range golden.Tools {
			own[g.Server] = true
		}
		var live struct{ Tools []publicTool }
		readJSON(t, "livemcpbench/tools.json", &live)
		var more []publicTool
		for _, l := range live.Tools {
			if !own[l.Server] {
				more = append(more, l)
			}
		}
		s.add(t, more)
	}
	return s
}

// publicQuality is how well an index ranks a public set, as
// mcpproxy-go's scorer measures it: recall@k is the share of a query's
// relevant tools (relevance 1 or 2) in the first k, averaged over the
// queries, and MRR the mean of 1/the rank of the first relevant tool.
// best1 and best5 are the share of queries whose best tool (relevance 2)
// is first, and in the first five.
type publicQuality struct {
	recall1, recall5, mrr, best1, best5 float64
	misses                              []string
}

func (q publicQuality) String() string {
	return fmt.Sprintf("recall@1 %.3f, recall@5 %.3f, MRR %.3f (best first %.3f, best in five %.3f)", q.recall1, q.recall5, q.mrr, q.best1, q.best5)
}

func evaluatePublic(ix *Index, s *publicSet) publicQuality {
	var q publicQuality
	for _, gq := range s.queries {
		hits := ix.Search(gq.Query, "", 20)
		rank := map[string]int{}
		for i, h := range hits {
			if _, seen := rank[s.ids[h.Doc]]; !seen {
				rank[s.ids[h.Doc]] = i + 1
			}
		}
		relevant, in1, in5, first, best := 0, 0, 0, 0, 0
		for _, l := range gq.Labels {
			r := rank[l.ToolID]
			if l.Relevance == 0 {
				continue
			}
			relevant++
			if r == 1 {
				in1++
			}
			if r >= 1 && r <= 5 {
				in5++
			}
			if r > 0 && (first == 0 || r < first) {
				first = r
			}
			if l.Relevance == 2 && r > 0 && (best == 0 || r < best) {
				best = r
			}
		}
		q.recall1 += float64(in1) / float64(relevant)
		q.recall5 += float64(in5) / float64(relevant)
		if first > 0 {
			q.mrr += 1 / float64(first)
		}
		if best == 1 {
			q.best1++
		}
		if best >= 1 && best <= 5 {
			q.best5++
		} else {
			var got []string
			for _, h := range hits[:min(3, len(hits))] {
				got = append(got, s.ids[h.Doc])
			}
			q.misses = append(q.misses, fmt.Sprintf("%s %q: best at rank %d, first %v", gq.ID, gq.Query, best, got))
		}
	}
	n := float64(len(s.queries))
	q.recall1, q.recall5, q.mrr, q.best1, q.best5 = q.recall1/n, q.recall5/n, q.mrr/n, q.best1/n, q.best5/n
	return q
}

// loadSteps is LiveMCPBench's 527 tools, and a query for each annotated
// step of a task whose steps and tools the annotators listed one for one
// (39 of the 95 tasks): the step's text, answered by any tool of the
// name listed at its place (the annotations do not say which server's).
// The pairing by position is the annotators' own order; a few steps
// ("write the report") name no tool's work, which caps every ranking.
func loadSteps(t testing.TB) *publicSet {
	t.Helper()
	var live struct{ Tools []publicTool }
	readJSON(t, "livemcpbench/tools.json", &live)
	s := &publicSet{}
	s.add(t, live.Tools)
	byName := map[string][]string{}
	for i, p := range live.Tools {
		byName[p.Tool] = append(byName[p.Tool], s.ids[i])
	}
	var tasks []struct {
		ID   string                        `json:"task_id"`
		Meta struct{ Steps, Tools string } `json:"Annotator Metadata"`
	}
	readJSON(t, "livemcpbench/all_annotations.json", &tasks)
	for _, task := range tasks {
		steps, tools := numbered(task.Meta.Steps), numbered(task.Meta.Tools)
		if len(steps) != len(tools) {
			continue
		}
		for i, step := range steps {
			q := goldenQuery{ID: fmt.Sprintf("%s/%d", task.ID[:8], i+1), Query: step}
			for _, id := range byName[tools[i]] {
				q.Labels = append(q.Labels, struct {
					ToolID    string `json:"tool_id"`
					Relevance int    `json:"relevance"`
				}{id, 2})
			}
			if q.Labels != nil {
				s.queries = append(s.queries, q)
			}
		}
	}
	return s
}

// numbered are the items of an annotator's numbered list ("1. load\n2. ...").
func numbered(list string) []string {
	var out []string
	for _, line := range strings.Split(list, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if i := strings.Index(line, ". "); i > 0 && isNumber(line[:i]) {
			line = strings.TrimSpace(line[i+2:])
		}
		out = append(out, line)
	}
	return out
}

// publicSets are the sets the figures are published for, each with the
// floor under its recall@1 and recall@5 where the ranking stands, so that
// a change that makes it worse fails here.
type publicCase struct {
	name           string
	set            *publicSet
	floor1, floor5 float64
}

func publicSets(t testing.TB) []publicCase {
	return []publicCase{
		{"golden", loadPublic(t, false), 0.66, 0.88},
		{"golden+LiveMCPBench", loadPublic(t, true), 0.55, 0.84},
		{"LiveMCPBench-steps", loadSteps(t), 0.48, 0.65},
	}
}

func TestPublicRecall(t *testing.T) {
	for _, ps := range publicSets(t) {
		t.Run(ps.name, func(t *testing.T) {
			q := evaluatePublic(New(ps.set.docs), ps.set)
			t.Logf("%d tools, %d queries: %v", len(ps.set.docs), len(ps.set.queries), q)
			for _, m := range q.misses {
				t.Log("miss:", m)
			}
			if q.recall1 < ps.floor1 || q.recall5 < ps.floor5 {
				t.Errorf("recall@1 %.3f, recall@5 %.3f; want at least %.2f and %.2f", q.recall1, q.recall5, ps.floor1, ps.floor5)
			}
		})
	}
}

// BenchmarkPublic reports the figures of each public set
// (go test -run - -bench Public ./server/search/).
func BenchmarkPublic(b *testing.B) {
	for _, ps := range publicSets(b) {
		b.Run(ps.name, func(b *testing.B) {
			ix := New(ps.set.docs)
			var q publicQuality
			for b.Loop() {
				q = evaluatePublic(ix, ps.set)
			}
			b.ReportMetric(q.recall1, "recall@1")
			b.ReportMetric(q.recall5, "recall@5")
			b.ReportMetric(q.mrr, "MRR")
			b.ReportMetric(float64(len(ps.set.docs)), "tools")
		})
	}
}
