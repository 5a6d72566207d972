package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// words splits text into lower-case words: at every character that is no
// letter or digit, inside camelCase ("readTextFile", "HTMLParser"), and
// where a run of CJK script begins or ends, so that read_text_file,
// read-text-file, read.text.file and readTextFile give the same words.
// Letters and digits stay together ("base64", "v2").
func words(text string) []string {
	var out []string
	eachWord(text, func(w string) { out = append(out, strings.ToLower(w)) })
	return out
}

// eachWord calls f with each word of text as it is written (words gives
// them in lower case), without copying it.
func eachWord(text string, f func(word string)) {
	start := -1
	var prev rune
	for i, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				f(text[start:i])
			}
			start, prev = -1, r
			continue
		}
		if start >= 0 && isCJK(r) != isCJK(prev) {
			// A run of Chinese, Japanese or Korean script is a word of
			// its own ("MCP搜索" -> MCP 搜索), split into bigrams later.
			f(text[start:i])
			start = -1
		} else if start >= 0 && unicode.IsUpper(r) {
			// A new word begins at lower->Upper ("readText"), and at the
			// last capital of a run followed by a lower-case letter
			// ("HTMLParser" -> HTML Parser).
			next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && unicode.IsLower(next) {
				f(text[start:i])
				start = -1
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	if start >= 0 {
		f(text[start:])
	}
}

// terms are the index terms of text: its words without stop words and
// numbers, abbreviations written out, stemmed.
func terms(text string) []string { return (&termCache{}).terms(text) }

// termCache remembers the terms of the words it has seen: the tools of a
// hub share most of their words, so that building an index stems each
// word once.
type termCache map[string][]string

func (c *termCache) terms(text string) []string {
	if *c == nil {
		*c = termCache{}
	}
	var out []string
	eachWord(text, func(w string) {
		ts, ok := (*c)[w] // as written: a word seen before costs no copy
		if !ok {
			ts = wordTerms(strings.ToLower(w))
			(*c)[strings.Clone(w)] = ts
		}
		out = append(out, ts...)
	})
	return out
}

// wordTerms are the terms of one lower-case word: none for a stop word
// or number, an abbreviation's words written out, a CJK run's bigrams,
// or its stem.
func wordTerms(w string) []string {
	switch {
	case isCJK(firstRune(w)):
		return bigrams(w)
	case len(w) < 2 || stopWords()[w] || isNumber(w):
		return nil
	case abbreviations()[w] != nil:
		return abbreviations()[w]
	}
	return []string{stem(w)}
}

// abbreviations are short forms of software English, written out (and
// stemmed) wherever they occur, in a query or a tool's text alike.
//
// This table and the others of words (stopWords, synonymOf, actions,
// keepWhole) are built at the first search or index, not at start: built
// at init they cost every process of the binary 116 KB of heap and half a
// millisecond, a bridge of the shared hub and `dynamic-mcp version`
// included.
var abbreviations = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for short, long := range map[string]string{
		"pr": "pull request", "prs": "pull requests", "mr": "merge request", "mrs": "merge requests",
		"repo": "repository", "repos": "repositories", "db": "database", "k8s": "kubernetes",
		"env": "environment", "dir": "directory", "dirs": "directories", "msg": "message", "msgs": "messages",
		"docs": "documentation", "doc": "documentation", "config": "configuration", "info": "information",
		"js": "javascript", "ts": "typescript", "img": "image", "pic": "picture", "pics": "pictures",
		"vars": "variables", "var": "variable", "auth": "authentication", "ci": "continuous integration",
	} {
		for _, w := range words(long) {
			m[short] = append(m[short], stem(w))
		}
	}
	return m
})

// isCJK reports whether r is written in Chinese, Japanese or Korean
// script (Han, Hiragana, Katakana with its prolonged sound mark, Hangul),
// which puts no spaces between words.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー'
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// bigrams are the terms of a run of CJK script: its overlapping pairs of
// characters ("必应搜索" -> 必应 应搜 搜索), or the one character of a run of
// one. Without a dictionary of words (which a static binary would carry
// for a few languages at megabytes each), the pairs of a query meet the
// pairs of a description wherever they share a word of two characters or
// more, as Lucene's CJKAnalyzer has it; the stray pairs across two words
// are rare enough to count little.
func bigrams(run string) []string {
	rs := []rune(run)
	if len(rs) == 1 {
		return []string{run}
	}
	out := make([]string, 0, len(rs)-1)
	for i := range len(rs) - 1 {
		out = append(out, string(rs[i:i+2]))
	}
	return out
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// stopWords carry no meaning for finding a tool: English function words,
// and the words every tool description uses of itself.
var stopWords = sync.OnceValue(func() map[string]bool {
	return set(`a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing don each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of off on
once only or other our ours ourselves out over own please same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves
everything anything something nothing everyone anyone someone
tool tools use used using uses want need needs like via etc e.g eg ie`)
})

// synonyms are words of general English that mean the same thing, or
// near it, when someone asks for a tool: a query word finds tools that
// use another word of its set, at a lower weight than its own (see
// synonymWeight).
var synonyms = [][]string{
	{"show", "display", "view", "see", "print", "read"},
	{"read", "open", "load", "view"},
	{"find", "search", "look", "lookup", "locate", "seek", "discover"},
	{"get", "fetch", "retrieve", "obtain", "download", "grab"},
	{"delete", "remove", "erase", "destroy", "purge"},
	{"create", "make", "new", "add", "generate"},
	{"append", "add", "attach"},
	{"multiple", "several", "many", "batch"},
	{"task", "job", "operation", "process"},
	{"edit", "change", "modify", "update", "alter"},
	{"write", "save", "store", "persist", "record"},
	{"run", "execute", "exec", "invoke", "launch", "trigger"},
	{"send", "post", "publish", "submit", "share"},
	{"list", "enumerate"},
	{"directory", "folder"},
	{"file", "document"},
	{"picture", "image", "photo", "screenshot"},
	{"page", "webpage", "site", "website", "url"},
	{"web", "internet", "online"},
	{"repeat", "echo", "parrot"},
	{"sum", "add", "total", "plus", "addition"},
	{"number", "numeric", "integer"},
	{"move", "rename", "relocate", "transfer"},
	{"close", "shut", "quit", "exit"},
	{"reply", "respond", "answer", "response"},
	{"comment", "note", "remark"},
	{"user", "person", "people", "member", "account", "profile"},
	{"message", "chat"},
	{"channel", "room"},
	{"reaction", "react", "emoji"},
	{"issue", "bug", "ticket"},
	{"repository", "project", "codebase"},
	{"code", "source", "snippet"},
	{"kubernetes", "kube", "cluster"},
	{"pod", "container"},
	{"deployment", "deploy", "release", "rollout"},
	{"install", "setup"},
	{"log", "logging"},
	{"scale", "resize"},
	{"size", "big", "large", "dimension"},
	{"location", "place", "address", "coordinate", "latitude", "longitude", "position"},
	{"direction", "route"},
	{"distance", "far"},
	{"elevation", "altitude", "height"},
	{"documentation", "manual", "reference", "guide"},
	{"library", "package", "framework", "module", "dependency"},
	{"think", "reason", "thought"},
	{"database", "sql", "table", "row", "column"},
	{"memory", "remember", "recall", "memorize"},
	{"entity", "thing", "node"},
	{"relation", "relationship", "link", "connect"},
	{"observation", "fact", "note"},
	{"form", "field", "input", "fill"},
	{"click", "press", "tap", "hit"},
	{"key", "keyboard", "keystroke"},
	{"wait", "pause", "sleep", "hold"},
	{"compress", "zip", "gzip", "archive"},
	{"tree", "hierarchy", "structure", "nested", "recursive"},
	{"metadata", "information", "detail", "property", "attribute", "stat"},
	{"allowed", "permitted", "accessible", "access", "permission"},
	{"crawl", "spider", "traverse"},
	{"extract", "scrape"},
	{"research", "investigate", "study"},
	{"paper", "article", "publication"},
	{"monitor", "watch", "track"},
	{"status", "progress", "state"},
	{"fork", "copy", "clone"},
	{"dialog", "popup", "modal"},
	{"network", "request", "http"},
	{"dropdown", "select", "option", "choose", "pick"},
	{"previous", "back", "prior"},
}

// synonymWeight is what a synonym of a query word counts for, against 1
// for the word itself.
const synonymWeight = 0.8

// synonymOf maps a stemmed word to the stems of its synonyms.
var synonymOf = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, set := range synonyms {
		stems := make([]string, len(set))
		for i, w := range set {
			stems[i] = stem(w)
		}
		for _, a := range stems {
			for _, b := range stems {
				if a != b && !contains(m[a], b) {
					m[a] = append(m[a], b)
				}
			}
		}
	}
	return m
})

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// actions sort the verbs a tool's name starts with, and a request's
// verbs, into what they do to their object. A request to read is served
// better by get_file than by edit_file, though both name a file.
var actions = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for class, verbs := range map[string]string{
		"read":   "read get show display view open fetch retrieve see print load describe inspect",
		"list":   "list enumerate browse",
		"create": "create make new add generate insert",
		"write":  "write save store put",
		"update": "update edit change modify alter patch set rename replace",
		"delete": "delete remove erase destroy purge clear uninstall",
		"search": "search find look lookup locate seek query",
		"run":    "run execute exec invoke launch trigger start evaluate",
		"send":   "send post publish submit tell notify share reply",
	} {
		for _, v := range strings.Fields(verbs) {
			m[stem(v)] = class
		}
	}
	return m
})

// actionOf is the class of the first of terms that is an action verb, or
// "".
func actionOf(terms []string) string {
	for _, t := range terms {
		if a, ok := actions()[t]; ok {
			return a
		}
	}
	return ""
}
