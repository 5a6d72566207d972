package search

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"read_text_file", []string{"read", "text", "file"}},
		{"read-text.file", []string{"read", "text", "file"}},
		{"readTextFile", []string{"read", "text", "file"}},
		{"HTMLParser v2 base64", []string{"html", "parser", "v2", "base64"}},
		{"API-get-user", []string{"api", "get", "user"}},
		{"getURLForID", []string{"get", "url", "for", "id"}},
		{"MCP搜索v2", []string{"mcp", "搜索", "v2"}},
		{"Ünïcode wörds", []string{"ünïcode", "wörds"}},
		{"  ", nil},
	} {
		if got := words(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("words(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestTerms(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Show me what is in the files", []string{"show", "file"}},
		{"open a PR", []string{"open", "pull", "request"}},
		{"error 404 on port 8080", []string{"error", "port"}},
		{"Use this tool to list directories", []string{"list", "directori"}},
		// CJK runs are split into overlapping bigrams, a lone character kept.
		{"使用必应搜索", []string{"使用", "用必", "必应", "应搜", "搜索"}},
		{"MCP搜索工具，天", []string{"mcp", "搜索", "索工", "工具", "天"}},
		{"查询12306余票", []string{"查询", "余票"}},
		{"ファイルを読む", []string{"ファ", "ァイ", "イル", "ルを", "を読", "読む"}},
		{"날씨 예보", []string{"날씨", "예보"}},
	} {
		if got := terms(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("terms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func tool(name, description string, args ...string) json.RawMessage {
	props := map[string]any{}
	for _, a := range args {
		props[a] = map[string]any{"type": "string", "description": "the " + a}
	}
	b, _ := json.Marshal(map[string]any{"name": name, "description": description, "inputSchema": map[string]any{"type": "object", "properties": props}})
	return b
}

// testDocs are a few tools of two groups that offer the same thing.
func testDocs() []Doc {
	return []Doc{
		{Group: "files", GroupDescription: "The project's files", Tool: tool("read_file", "Read a file. DEPRECATED: use read_text_file", "path")},
		{Group: "files", GroupDescription: "The project's files", Tool: tool("read_text_file", "Read the contents of a file as text", "path")},
		{Group: "files", GroupDescription: "The project's files", Tool: tool("write_file", "Write text to a file, showing the diff", "path", "content")},
		{Group: "github", GroupDescription: "GitHub issues and pull requests", Tool: tool("create_issue", "Create an issue in a repository", "title", "body")},
		{Group: "gitlab", GroupDescription: "GitLab issues and merge requests", Tool: tool("create_issue", "Create an issue in a project", "title", "body")},
		{Group: "broken", Tool: json.RawMessage(`{"description":"no name, never found"}`)},
		{Group: "broken", Tool: json.RawMessage(`not json`)},
		{Group: "odd", Tool: json.RawMessage(`{"name":"odd_args","description":"Count the sheep","inputSchema":{"properties":{"n":true,"m":{"description":7}}}}`)},
	}
}

func TestSearch(t *testing.T) {
	ix := New(testDocs())
	docs := testDocs()
	name := func(h Hit) string {
		var d struct{ Name string }
		_ = json.Unmarshal(docs[h.Doc].Tool, &d)
		return docs[h.Doc].Group + "/" + d.Name
	}
	for _, tc := range []struct {
		name, query, group string
		limit              int
		want               []string
	}{
		{"words of the description", "show me the contents of a file", "", 1, []string{"files/read_text_file"}},
		{"deprecated comes after its successor", "read a file", "", 1, []string{"files/read_text_file"}},
		{"the group's description separates groups", "open an issue on GitHub", "", 1, []string{"github/create_issue"}},
		{"group", "open an issue", "gitlab", 5, []string{"gitlab/create_issue"}},
		{"exact name first", "write_file contents", "", 1, []string{"files/write_file"}},
		{"exact flat name", "`github__create_issue`", "", 1, []string{"github/create_issue"}},
		{"exact name matching no word", "files__read_file", "", 1, []string{"files/read_file"}},
		{"limit", "file", "", 2, []string{"files/write_file", "files/read_text_file"}},
		{"a tool of odd arguments is still found", "count sheep", "", 5, []string{"odd/odd_args"}},
		{"nothing", "zebra", "", 5, nil},
		{"stop words only", "what is it", "", 5, nil},
		{"no limit", "file", "", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, h := range ix.Search(tc.query, tc.group, tc.limit) {
				got = append(got, name(h))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Search(%q, %q, %d) = %q, want %q", tc.query, tc.group, tc.limit, got, tc.want)
			}
		})
	}
	if New(nil).Search("file", "", 5) != nil {
		t.Error("an empty index found something")
	}
}

// The index is read by many requests at once (run with -race), and gives
// the same answer every time.
func TestSearchConcurrent(t *testing.T) {
	ix := New(testDocs())
	want := fmt.Sprint(ix.Search("read a file", "", 5))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if got := fmt.Sprint(ix.Search("read a file", "", 5)); got != want {
					t.Errorf("got %s, want %s", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzSearch(f *testing.F) {
	ix := New(testDocs())
	for _, q := range []string{"read a file", "files__read_file", "", "ÄÖÜ", "a\x00b", "PR k8s"} {
		f.Add(q, "")
	}
	f.Fuzz(func(t *testing.T, query, group string) {
		hits := ix.Search(query, group, 3)
		if len(hits) > 3 {
			t.Errorf("%d hits for a limit of 3", len(hits))
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Doc == hits[i-1].Doc {
				t.Errorf("tool %d twice", hits[i].Doc)
			}
		}
	})
}

// A query of thousands of words (a pasted document, or a client that
// means harm) is read for its first maxQueryBytes and maxQueryConcepts
// only: grouping its words into concepts was quadratic, and a query of
// 10,000 distinct words over 1,000 tools took 1.5 s of CPU. Words that
// are synonyms of each other still make one concept.
func TestLongQuery(t *testing.T) {
	var b strings.Builder
	b.WriteString("read the file ")
	for i := 0; b.Len() < 100_000; i++ {
		fmt.Fprintf(&b, "zz%dq ", i)
	}
	q := b.String()
	if got := cutQuery(q); len(got) > maxQueryBytes || !strings.HasPrefix(q, got) || strings.HasSuffix(got, " ") || !strings.HasPrefix(q[len(got):], " ") {
		t.Errorf("cutQuery cut %d bytes of %d, not at a space: ...%q", len(got), len(q), got[max(0, len(got)-10):])
	}
	if got := cutQuery(strings.Repeat("é", 2000)); len(got) > maxQueryBytes || !utf8.ValidString(got) {
		t.Errorf("cutQuery cut a rune in two: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	cs := queryConcepts(q)
	if len(cs) != maxQueryConcepts {
		t.Errorf("%d concepts, want %d", len(cs), maxQueryConcepts)
	}
	if !slices.ContainsFunc(cs[0], func(q queryTerm) bool { return q.term == "read" && q.weight == 1 }) {
		t.Errorf("first concept %v, want read's", cs[0])
	}
	if got := len(queryConcepts("make a new page")); got != 2 {
		t.Errorf("make a new page: %d concepts, want 2 (make and new are synonyms)", got)
	}
	ix := New(testDocs())
	if hits := ix.Search(q, "", 1); len(hits) != 1 || testDocs()[hits[0].Doc].Group != "files" {
		t.Errorf("the long query found %v", hits)
	}
}

// A query word that is also a one-word tool name (search, fetch,
// calculate) does not put that tool first when the rest of the query asks
// for something else; the query that is just the name still does, and a
// name of several words still comes first wherever it is written.
func TestOneWordNames(t *testing.T) {
	docs := []Doc{
		{Group: "web", Tool: tool("fetch", "Fetches a URL from the internet and returns its contents", "url")},
		{Group: "web", Tool: tool("search", "Search the web", "query")},
		{Group: "weather", Tool: tool("get_forecast", "Get the weather forecast for a city", "city")},
		{Group: "travel", Tool: tool("find_flights", "Find flights between two airports on a date", "from", "to", "date")},
		{Group: "math", Tool: tool("calculate", "Evaluate an arithmetic expression", "expression")},
		{Group: "health", Tool: tool("bmi", "Body mass index from a weight and a height", "weight", "height")},
	}
	ix := New(docs)
	for _, tc := range []struct{ query, want string }{
		{"fetch the weather forecast for Paris", "weather/get_forecast"},
		{"search for flights from Paris to Rome", "travel/find_flights"},
		{"calculate my body mass index from weight and height", "health/bmi"},
		{"fetch", "web/fetch"},
		{"use search", "web/search"},
		{"calculate 2+2", "math/calculate"},
		{"find_flights weather", "travel/find_flights"},
	} {
		got := ""
		if hits := ix.Search(tc.query, "", 1); len(hits) > 0 {
			var d struct{ Name string }
			_ = json.Unmarshal(docs[hits[0].Doc].Tool, &d)
			got = docs[hits[0].Doc].Group + "/" + d.Name
		}
		if got != tc.want {
			t.Errorf("Search(%q) first = %q, want %q", tc.query, got, tc.want)
		}
	}
}

// Tools described only in Chinese or Japanese are found by a query in
// that language, and the one it asks for comes first.
func TestSearchCJK(t *testing.T) {
	docs := []Doc{
		{Group: "12306", Tool: tool("get-tickets", "查询12306余票信息。", "date")},
		{Group: "12306", Tool: tool("get-current-date", "获取当前日期，以上海时区为准", "")},
		{Group: "bing", Tool: tool("bing_search", "使用必应搜索指定的关键词，并返回搜索结果列表", "query")},
		{Group: "files", Tool: tool("read_file", "ファイルの内容を読み込みます", "path")},
	}
	ix := New(docs)
	for _, tc := range []struct{ query, want string }{
		{"查询明天的火车余票", "get-tickets"},
		{"今天的日期", "get-current-date"},
		{"用必应搜索新闻", "bing_search"},
		{"ファイルを読む", "read_file"},
	} {
		got := ""
		if hits := ix.Search(tc.query, "", 1); len(hits) > 0 {
			var d struct{ Name string }
			_ = json.Unmarshal(docs[hits[0].Doc].Tool, &d)
			got = d.Name
		}
		if got != tc.want {
			t.Errorf("Search(%q) first = %q, want %q", tc.query, got, tc.want)
		}
	}
}

// A word whose Porter stem is another word's finds only its own: "news"
// is not "new" (and so not "create"), a customer is not custom.
func TestSearchKeepsWholeWords(t *testing.T) {
	docs := []Doc{
		{Group: "pages", Tool: tool("create_page", "Create a new page")},
		{Group: "shop", Tool: tool("set_theme", "Apply a custom theme to the shop")},
		{Group: "files", Tool: tool("grep", "Tell which lines a text contains")},
	}
	ix := New(docs)
	for _, q := range []string{"news", "customers", "containers"} {
		if hits := ix.Search(q, "", 5); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want nothing", q, hits)
		}
	}
}
