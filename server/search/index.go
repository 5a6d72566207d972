package search

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"unicode"
)

// Doc is one tool to index: its definition as its server listed it, and
// the group it is in.
type Doc struct {
	Group            string
	GroupDescription string
	Tool             json.RawMessage
}

// Hit is one match: the position of its Doc in what New was given, and
// its score (higher is better; only the order means anything).
type Hit struct {
	Doc   int
	Score float64
}

// The fields of a tool that are searched, and what a match in each
// counts for. A tool's name says most about what it does, its title and
// description more than its arguments; the group's description says the
// same of every tool in the group, so it mostly separates groups that
// offer the same tools (GitHub's and GitLab's create_issue).
const (
	fieldName = iota
	fieldTitle
	fieldSummary // the description's first sentence
	fieldDescription
	fieldArgs
	fieldGroup
	numFields
)

var (
	fieldWeight = [numFields]float64{2, 1, 0.5, 1, 0.25, 1}
	// fieldB is BM25's length normalisation per field: long descriptions
	// and argument lists say less per word than short ones.
	fieldB = [numFields]float64{0.5, 0.5, 0.5, 0.75, 0.75, 0.5}
)

// k1 is BM25's saturation: how fast more occurrences of a word stop
// counting.
const k1 = 3.0

// sameAction scales the score of a tool whose name's verb does what the
// query's first verb asks (reads when the query reads), so that of the
// tools on the right object, the one with the right action comes first.
const sameAction = 1.3

// deprecatedFactor scales the score of a tool whose title or description
// says it is deprecated, so its successor ranks first.
const deprecatedFactor = 0.5

// Index is an immutable index of tools, safe for concurrent searches.
type Index struct {
	docs     []docInfo
	postings map[string][]posting
	// names maps a tool's name, and <group>__<name>, in lower case, to
	// the tools of that name: a query that names a tool finds it first.
	names map[string][]int32
}

type docInfo struct {
	group      string
	action     string // what the verb its name starts with does ("" for none)
	deprecated bool
}

// posting is one tool a term occurs in, with its weighted, length
// normalised term frequency over the fields (BM25F's pseudo-frequency).
type posting struct {
	doc int32
	tf  float32
}

// New indexes docs. A tool whose definition is not a JSON object with a
// name is indexed with no text, so it is never found but keeps its
// position.
func New(docs []Doc) *Index {
	ix := &Index{docs: make([]docInfo, len(docs)), postings: map[string][]posting{}, names: map[string][]int32{}}
	fields := make([][numFields][]string, len(docs))
	var total [numFields]float64
	groupTerms := map[string][]string{}
	var cache termCache
	for i, d := range docs {
		t, ok := parseTool(d.Tool)
		ix.docs[i].group = d.Group
		if !ok {
			continue
		}
		gt, seen := groupTerms[d.Group]
		if !seen {
			gt = cache.terms(d.Group + " " + d.GroupDescription)
			groupTerms[d.Group] = gt
		}
		f := &fields[i]
		f[fieldName] = cache.terms(t.name)
		f[fieldTitle] = cache.terms(t.title)
		f[fieldSummary] = cache.terms(firstSentence(t.description))
		f[fieldDescription] = cache.terms(t.description)
		f[fieldArgs] = cache.terms(t.args)
		f[fieldGroup] = gt
		for k := range numFields {
			total[k] += float64(len(f[k]))
		}
		lower := strings.ToLower(t.name)
		ix.names[lower] = append(ix.names[lower], int32(i))
		flat := strings.ToLower(d.Group) + "__" + lower
		ix.names[flat] = append(ix.names[flat], int32(i))
		ix.docs[i].action = actionOf(f[fieldName])
		ix.docs[i].deprecated = deprecated(t)
	}
	var avg [numFields]float64
	for k := range numFields {
		avg[k] = total[k] / float64(max(len(docs), 1))
	}
	tf := map[string]float64{}
	for i := range docs {
		clear(tf)
		for k := range numFields {
			norm := 1.0
			if avg[k] > 0 {
				norm = 1 - fieldB[k] + fieldB[k]*float64(len(fields[i][k]))/avg[k]
			}
			for _, term := range fields[i][k] {
				tf[term] += fieldWeight[k] / norm
			}
		}
		for term, f := range tf {
			ix.postings[term] = append(ix.postings[term], posting{doc: int32(i), tf: float32(f)})
		}
	}
	return ix
}

// idf is BM25's inverse document frequency of a term (or concept) that df
// of the tools have.
func (ix *Index) idf(df int) float64 {
	n, d := float64(len(ix.docs)), float64(df)
	return math.Log(1 + (n-d+0.5)/(d+0.5))
}

// saturate is BM25's term frequency saturation.
func saturate(tf float64) float64 { return tf * (k1 + 1) / (tf + k1) }

// Search returns the best matches for query, best first: at most limit,
// only tools of group when group is not "". A tool the query names
// exactly (by its name, or <group>__<name>; see named) comes before all others;
// the rest are ranked by BM25F over their text, with the query's words
// stemmed and their synonyms counted at a lower weight. Tools that match
// no word of the query are not returned.
//
// Only the first maxQueryBytes of a query are read, and of those the
// first maxQueryConcepts concepts counted.
func (ix *Index) Search(query, group string, limit int) []Hit {
	if limit <= 0 || len(ix.docs) == 0 {
		return nil
	}
	query = cutQuery(query)
	scores := make([]float64, len(ix.docs))
	action := actionOf(terms(query))
	// Each concept of the query (a word with its synonyms) counts once for
	// a tool, so "make a new page" does not count its "create" for both
	// "make" and "new". A concept scores half as one term, as Lucene's
	// SynonymQuery has it (its frequency that of its words, weighted; its
	// rarity that of the tools having any of them), so a rare synonym
	// buried in a long description ("showing the changes") does not
	// outweigh a common one in a name ("read_text_file") for "show me the
	// file"; and half by the best of its words alone, so a concept of
	// many synonyms is not drowned by their number. Together they rank
	// the corpus best (see corpus_test.go).
	tf := make([]float64, len(ix.docs))
	best := make([]float64, len(ix.docs))
	var touched []int32
	for _, c := range queryConcepts(query) {
		for _, q := range c {
			idf := ix.idf(len(ix.postings[q.term]))
			for _, p := range ix.postings[q.term] {
				if tf[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				f := float64(p.tf)
				tf[p.doc] += q.weight * f
				best[p.doc] = max(best[p.doc], q.weight*idf*saturate(f))
			}
		}
		idf := ix.idf(len(touched))
		for _, d := range touched {
			scores[d] += (idf*saturate(tf[d]) + best[d]) / 2
			tf[d], best[d] = 0, 0
		}
		touched = touched[:0]
	}
	exact := ix.named(query)
	top := make([]Hit, 0, limit+1)
	better := func(a, b Hit) bool {
		if ea, eb := exact[int32(a.Doc)], exact[int32(b.Doc)]; ea != eb {
			return ea
		}
		return a.Score > b.Score
	}
	for i, s := range scores {
		if s <= 0 && !exact[int32(i)] || group != "" && ix.docs[i].group != group {
			continue
		}
		if ix.docs[i].deprecated {
			s *= deprecatedFactor
		}
		if action != "" && ix.docs[i].action == action {
			s *= sameAction
		}
		h := Hit{Doc: i, Score: s}
		if len(top) == limit && !better(h, top[limit-1]) {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, h, func(a, b Hit) int {
			if better(b, a) {
				return 1
			}
			return -1 // after every hit it is not better than: the first listed wins ties
		})
		top = slices.Insert(top, at, h)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	return top
}

// named are the tools a query names exactly, which come before all
// others. A name of several words (read_text_file, github__create_issue,
// createIssue) is named wherever the query writes it: nobody writes one
// by chance. A name of one word (search, fetch, calculate) is an
// ordinary word too, so it names its tool only when the query says
// nothing else ("fetch", "use calculate"); in "fetch the weather
// forecast" it is one word among others, ranked like them, where the
// name field's weight already favours the tool.
func (ix *Index) named(query string) map[int32]bool {
	exact := map[int32]bool{}
	var rest []string // the query's terms, once a one-word name is found
	for _, w := range strings.Fields(strings.ToLower(query)) {
		w = strings.Trim(w, "`'\"“”‘’.,:;!?()[]{}<>")
		docs := ix.names[w]
		if len(docs) == 0 {
			continue
		}
		if len(words(w)) == 1 {
			if rest == nil {
				rest = terms(query)
			}
			if slices.ContainsFunc(rest, func(t string) bool { return !slices.Contains(terms(w), t) }) {
				continue
			}
		}
		for _, d := range docs {
			exact[d] = true
		}
	}
	return exact
}

// maxQueryConcepts is how many concepts of a query are searched for, and
// maxQueryBytes how much of its text is read: a model asks in a few words,
// and a query of thousands (a pasted document, or a client that means
// harm) would otherwise cost a pass over the postings for each.
const (
	maxQueryConcepts = 32
	maxQueryBytes    = 2048
)

// cutQuery is the first maxQueryBytes of query, cut after its last space
// there, so that no word is read cut short.
func cutQuery(query string) string {
	if len(query) <= maxQueryBytes {
		return query
	}
	q := query[:maxQueryBytes]
	if i := strings.LastIndexFunc(q, unicode.IsSpace); i > 0 {
		return q[:i]
	}
	return strings.ToValidUTF8(q, "")
}

type queryTerm struct {
	term   string
	weight float64
}

// queryConcepts are the concepts of query: each of its stemmed words
// (weight 1) with its synonyms (synonymWeight), words that are synonyms
// of each other making one concept. Concepts and their terms are sorted,
// so that scores are summed in the same order every time.
// Only the first maxQueryConcepts concepts count.
func queryConcepts(query string) [][]queryTerm {
	var concepts []map[string]float64
	in := map[string]int{} // term -> the concept it is in
	for _, t := range terms(query) {
		i, ok := in[t]
		if !ok {
			if len(concepts) == maxQueryConcepts {
				continue
			}
			i = len(concepts)
			concepts = append(concepts, map[string]float64{})
		}
		into := concepts[i]
		into[t] = 1
		in[t] = i
		for _, s := range synonymOf()[t] {
			if into[s] < synonymWeight {
				into[s] = synonymWeight
			}
			if j, seen := in[s]; !seen || i < j {
				in[s] = i // the first concept that has it, as words are looked up
			}
		}
	}
	out := make([][]queryTerm, 0, len(concepts))
	for _, c := range concepts {
		terms := make([]queryTerm, 0, len(c))
		for t, w := range c {
			terms = append(terms, queryTerm{t, w})
		}
		slices.SortFunc(terms, func(a, b queryTerm) int { return strings.Compare(a.term, b.term) })
		out = append(out, terms)
	}
	return out
}

// firstSentence is the start of a description up to its first full stop
// or blank line: where most descriptions say what the tool does, before
// how to call it.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	end := len(s)
	for _, sep := range []string{". ", ".\n", "\n\n"} {
		if i := strings.Index(s, sep); i >= 0 && i < end {
			end = i
		}
	}
	return s[:end]
}

// deprecated reports whether a tool says it is: in its title, or with
// DEPRECATED in capitals or Deprecated first in its description (a
// description that merely mentions a deprecated thing does not count).
func deprecated(t toolText) bool {
	return strings.Contains(strings.ToLower(t.title), "deprecated") ||
		strings.Contains(t.description, "DEPRECATED") || strings.HasPrefix(t.description, "Deprecated")
}
