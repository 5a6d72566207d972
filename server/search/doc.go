// Package search ranks the tools of every group by how well their text
// matches what a model asks for, for dynamic mode's search_dynamic_tools,
// and writes the entries get_dynamic_tools and search_dynamic_tools hand
// tools out in (AppendEntries). It is pure: no I/O, no server imports.
//
// An Index is an immutable value built from the tools' definitions as
// their servers listed them; the hub builds one on the first search of
// each view (not on its event loop, which builds views) and searches it
// without locks.
//
// Ranking is BM25F over a tool's name (split at _ - . and camelCase),
// title, the first sentence of its description, the whole description,
// its arguments' names, titles and descriptions, and its group's name and
// description, each field weighted and length-normalised on its own.
// Words are lower-cased, stop words and numbers dropped, a few software
// abbreviations written out (PR, repo, k8s) and the rest stemmed; runs of
// Chinese, Japanese or Korean script become overlapping character
// bigrams. Each query word brings its synonyms (a short list of general
// English, not of any query's answer) as one concept that counts once. A
// tool the query names exactly comes first (a one-word name such as
// fetch only when the query is just that name); a tool that says it is
// deprecated, and one whose name's verb does something else than the
// query's, rank lower. The weights were chosen on testdata/search (82
// queries, 202 tools of 17 npm servers), half the queries at a time to
// see that they carry over to the other half; corpus_test.go measures
// recall@1, recall@5 and MRR, and public_test.go the same on public sets
// (mcpproxy-go's golden set, LiveMCPBench) that the tuning did not see.
//
// Decisions, by what they cost:
//
//   - The stemmer is Porter's original algorithm written here (stem.go,
//     tested on the paper's examples, with a few words kept whole whose
//     stem is another word's) rather than github.com/kljensen/snowball:
//     the library's English stemmer adds about 210 KB to a binary that
//     calls it (2.61 MB against 2.40 MB for a program of fmt and os alone)
//     and a dependency for one function, where this is 250 lines and
//     adds nothing at start (the synonym and abbreviation tables are
//     built at init in microseconds).
//   - BM25 here, not a library such as bleve: bleve brings tens of
//     packages and megabytes for analysis chains and on-disk indexes a hub
//     of at most a few thousand tools in memory does not need. Searching
//     1,000 tools takes well under a millisecond; building their index
//     some tens of milliseconds, most of it decoding the definitions
//     (which is why the hub builds it on the first search, not with
//     every view).
//   - No embeddings: they need a model at run time, which a single static
//     binary started by a client cannot fetch or carry cheaply.
package search
