package search

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// corpusDir holds real tools/list dumps of npm-published MCP servers and
// the queries of the benchmark; see its SOURCES.md.
var corpusDir = filepath.Join("..", "..", "testdata", "search")

type corpusQuery struct {
	Query string `json:"query"`
	Group string `json:"group"`
	Tool  string `json:"tool"`
}

type corpus struct {
	docs    []Doc
	names   []string // of docs, as the servers call them
	groups  []string // in config order
	queries []corpusQuery
	// heldout are queries written after the ranking was tuned, by someone
	// who had not read its synonym list: they measure what the tuning
	// did not see (see SOURCES.md).
	heldout []corpusQuery
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func loadCorpus(t testing.TB) *corpus {
	t.Helper()
	var groups []struct{ Group, Description string }
	readJSON(t, "groups.json", &groups)
	c := &corpus{}
	for _, g := range groups {
		var list struct {
			Tools []json.RawMessage `json:"tools"`
		}
		readJSON(t, g.Group+".json", &list)
		c.groups = append(c.groups, g.Group)
		for _, tool := range list.Tools {
			var def struct{ Name string }
			if err := json.Unmarshal(tool, &def); err != nil {
				t.Fatal(err)
			}
			c.docs = append(c.docs, Doc{Group: g.Group, GroupDescription: g.Description, Tool: tool})
			c.names = append(c.names, def.Name)
		}
	}
	readJSON(t, "queries.json", &c.queries)
	readJSON(t, "queries-heldout.json", &c.heldout)
	return c
}

// quality is how well ix ranks the corpus' queries.
type quality struct {
	recall1, recall5, mrr float64
	misses                []string // queries whose tool is not in the first five
}

func evaluate(ix *Index, c *corpus) quality { return evaluateOn(ix, c, c.queries) }

func evaluateOn(ix *Index, c *corpus, queries []corpusQuery) quality {
	var q quality
	for _, cq := range queries {
		rank := 0
		hits := ix.Search(cq.Query, "", 20)
		for i, h := range hits {
			if c.docs[h.Doc].Group == cq.Group && c.names[h.Doc] == cq.Tool {
				rank = i + 1
				break
			}
		}
		if rank == 1 {
			q.recall1++
		}
		if rank >= 1 && rank <= 5 {
			q.recall5++
		} else {
			var got []string
			for _, h := range hits[:min(3, len(hits))] {
				got = append(got, c.docs[h.Doc].Group+"/"+c.names[h.Doc])
			}
			q.misses = append(q.misses, fmt.Sprintf("%q: want %s/%s at rank %d, first %v", cq.Query, cq.Group, cq.Tool, rank, got))
		}
		if rank > 0 {
			q.mrr += 1 / float64(rank)
		}
	}
	n := float64(len(queries))
	q.recall1, q.recall5, q.mrr = q.recall1/n, q.recall5/n, q.mrr/n
	return q
}

// The corpus is what the benchmark says it is, and every query's tool is
// in it, so a figure can only move because the ranking did.
func TestCorpusIsWhole(t *testing.T) {
	c := loadCorpus(t)
	if len(c.docs) < 150 || len(c.queries) < 60 {
		t.Fatalf("corpus has %d tools and %d queries; the benchmark needs 150 and 60", len(c.docs), len(c.queries))
	}
	for _, q := range append(c.queries, c.heldout...) {
		found := false
		for i, d := range c.docs {
			found = found || d.Group == q.Group && c.names[i] == q.Tool
		}
		if !found {
			t.Errorf("query %q names %s/%s, which is not in the corpus", q.Query, q.Group, q.Tool)
		}
	}
}

// A change that makes the ranking worse fails here, not only in a
// benchmark nobody reads. The floors are where the ranking stands: 0.89
// and 0.68 (73 and 56 of 82 queries), against the targets of 0.9
// and 0.7, which BM25F with stemming and synonyms of general English
// misses by one and by two queries; what it misses needs knowing that a
// street is an address or a PR's files are a pull request's, which no
// lexical ranking does.
func TestCorpusRecall(t *testing.T) {
	c := loadCorpus(t)
	q := evaluate(New(c.docs), c)
	t.Logf("recall@1 %.3f, recall@5 %.3f, MRR %.3f over %d queries and %d tools", q.recall1, q.recall5, q.mrr, len(c.queries), len(c.docs))
	for _, m := range q.misses {
		t.Log("miss:", m)
	}
	if q.recall5 < 0.89 {
		t.Errorf("recall@5 %.3f, want at least 0.89", q.recall5)
	}
	if q.recall1 < 0.68 {
		t.Errorf("recall@1 %.3f, want at least 0.68", q.recall1)
	}
}

// BenchmarkCorpus reports the ranking's quality on the corpus and the
// bytes the model reads: the answer to a search for 5 tools, against the
// whole tools/list of flat mode and get_dynamic_tools for every group.
func BenchmarkCorpus(b *testing.B) {
	c := loadCorpus(b)
	ix := New(c.docs)
	var q quality
	for b.Loop() {
		q = evaluate(ix, c)
	}
	var answerBytes []int
	for _, cq := range c.queries {
		var entries []Entry
		for _, h := range ix.Search(cq.Query, "", 5) {
			entries = append(entries, Entry{Group: c.docs[h.Doc].Group, Tool: c.docs[h.Doc].Tool})
		}
		text, err := AppendEntries(nil, entries)
		if err != nil {
			b.Fatal(err)
		}
		answerBytes = append(answerBytes, len(text))
	}
	slices.Sort(answerBytes)
	flat, dynamic, largest := corpusListBytes(b, c)
	b.ReportMetric(q.recall1, "recall@1")
	b.ReportMetric(q.recall5, "recall@5")
	b.ReportMetric(q.mrr, "MRR")
	b.ReportMetric(float64(answerBytes[len(answerBytes)/2]), "answer-B-median")
	b.ReportMetric(float64(answerBytes[len(answerBytes)-1]), "answer-B-max")
	b.ReportMetric(float64(flat), "flat-tools/list-B")
	b.ReportMetric(float64(dynamic), "get_dynamic_tools-all-groups-B")
	b.ReportMetric(float64(largest), "get_dynamic_tools-largest-group-B")
	b.ReportMetric(float64(len(c.docs)), "tools")
	held := evaluateOn(ix, c, c.heldout)
	b.ReportMetric(held.recall1, "heldout-recall@1")
	b.ReportMetric(held.recall5, "heldout-recall@5")
	b.ReportMetric(held.mrr, "heldout-MRR")
}

// corpusListBytes are the bytes of flat mode's tools/list result for the
// corpus (every tool renamed <group>__<name>, as the hub lists it), of
// get_dynamic_tools' answers for all groups together, and of the largest.
func corpusListBytes(b *testing.B, c *corpus) (flat, dynamic, largest int) {
	flat = len(`{"tools":[]}`) - 1
	for i, d := range c.docs {
		name, _ := jsonrpc.Marshal(d.Group + "__" + c.names[i])
		renamed, err := jsonrpc.SetField(d.Tool, "name", name)
		if err != nil {
			b.Fatal(err)
		}
		flat += len(renamed) + 1
	}
	for _, g := range c.groups {
		var entries []Entry
		for _, d := range c.docs {
			if d.Group == g {
				entries = append(entries, Entry{Tool: d.Tool})
			}
		}
		text, err := AppendEntries(nil, entries)
		if err != nil {
			b.Fatal(err)
		}
		dynamic += len(text)
		largest = max(largest, len(text))
	}
	return flat, dynamic, largest
}

// thousand is the corpus copied until it holds 1,000 tools, each copy in
// groups of their own.
func thousand(c *corpus) []Doc {
	docs := make([]Doc, 0, 1000)
	for copy := 0; len(docs) < 1000; copy++ {
		for _, d := range c.docs {
			if len(docs) == 1000 {
				break
			}
			d.Group = fmt.Sprintf("%s-%d", d.Group, copy)
			docs = append(docs, d)
		}
	}
	return docs
}

// BenchmarkSearch1000 is one search over 1,000 tools, the queries in turn.
func BenchmarkSearch1000(b *testing.B) {
	c := loadCorpus(b)
	ix := New(thousand(c))
	i := 0
	for b.Loop() {
		ix.Search(c.queries[i%len(c.queries)].Query, "", 5)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/search")
}

// BenchmarkBuild1000 is building the index of 1,000 tools, which the hub
// does on its event loop whenever an upstream's tools change.
func BenchmarkBuild1000(b *testing.B) {
	docs := thousand(loadCorpus(b))
	for b.Loop() {
		New(docs)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/build")
}
