package resultcap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
)

// The store stays within its bounds: a caller's oldest result goes when
// it has its number, the oldest of all when the bytes are full, every
// result after its time, and one larger than the whole store is refused.
func TestResultStoreBounded(t *testing.T) {
	s := New(Options{})
	s.maxBytes, s.perCaller = 10*(1000+resultEntryCost), 3
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	put := func(caller string, n int) *Result {
		t.Helper()
		r := &Result{Call: Call{Caller: caller}, data: make([]byte, n)}
		if err := s.put(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := []*Result{put("a", 1000), put("a", 1000), put("a", 1000)}
	a = append(a, put("a", 1000)) // a's fourth: its first goes
	if s.get(a[0].id, "a") != nil || s.get(a[1].id, "a") == nil {
		t.Error("a's oldest result is kept past its number")
	}
	if s.get(a[1].id, "b") != nil {
		t.Error("b reads a's result")
	}
	var b []*Result
	for range 3 {
		b = append(b, put("b", 1000))
	}
	c := []*Result{put("c", 1000), put("c", 1000), put("c", 1000)}
	if n, bytes, _ := s.stats(); n != 9 || bytes != 9*(1000+resultEntryCost) {
		t.Fatalf("%d results of %d bytes", n, bytes)
	}
	put("d", 3000) // needs two entries' room: the two oldest of all go
	if s.get(a[1].id, "a") != nil || s.get(a[2].id, "a") != nil || s.get(a[3].id, "a") == nil || s.get(b[0].id, "b") == nil {
		t.Error("the oldest results of all were not the ones evicted")
	}
	if _, bytes, evicted := s.stats(); bytes > s.maxBytes || evicted != 3 {
		t.Errorf("%d bytes kept of %d, %d evicted", bytes, s.maxBytes, evicted)
	}
	if err := s.put(&Result{Call: Call{Caller: "e"}, data: make([]byte, s.maxBytes)}); err == nil || !strings.Contains(err.Error(), "larger than the hub keeps") {
		t.Errorf("a result larger than the store: %v", err)
	}
	now = now.Add(TTL)
	if s.get(c[2].id, "c") != nil {
		t.Error("a result is read after its time")
	}
	if n, bytes, _ := s.stats(); n != 0 || bytes != 0 {
		t.Errorf("%d results of %d bytes kept past their time", n, bytes)
	}
	if r := put("a", 10); len(r.id) < 20 || r.id == a[0].id {
		t.Errorf("id %q", r.id)
	}
}

// Pages break at rune boundaries, each within its room once encoded, and
// together are the data; data that is no UTF-8 is paged as blobs.
func TestPaginate(t *testing.T) {
	data := []byte(fakeupstream.LargeResult("mixed", 50000))
	starts, blob := paginate(data, 1000)
	if blob || len(starts) < 50 {
		t.Fatalf("%d pages, blob %v", len(starts), blob)
	}
	r := &Result{data: data, pages: starts}
	var whole []byte
	for p := 1; p <= len(starts); p++ {
		page := r.page(p)
		q, _ := json.Marshal(string(page))
		if !utf8.Valid(page) || jsonStringLen(string(page)) > 1000 || len(strings.ReplaceAll(string(q), `\u0026`, "&")) != jsonStringLen(string(page)) {
			t.Fatalf("page %d: valid %v, %d bytes encoded (counted %d)", p, utf8.Valid(page), len(q), jsonStringLen(string(page)))
		}
		whole = append(whole, page...)
	}
	if string(whole) != string(data) {
		t.Error("the pages are not the data")
	}
	if starts, blob := paginate([]byte("ab\xffcd"), 64); !blob || len(starts) != 1 {
		t.Errorf("invalid UTF-8: %v %v", starts, blob)
	}
}

// Whatever the result and the cap, the cut answer is valid JSON within
// the cap, and says where the whole is.
func TestFitResultWithinLimit(t *testing.T) {
	for _, kind := range []string{"text", "structured", "image", "mixed", "blocks", "small"} {
		// Larger than each cap, as small as that allows: under -race the
		// CPU of a cut follows the bytes it reads (a cut of 300 KB took
		// seconds), and 30 KB is still 20 times the smallest caps.
		wholes := map[int][]byte{}
		for _, limit := range []int{1500, 2000, 5000, 20000, 100000} {
			size := max(30000, limit*6/5)
			if wholes[size] == nil {
				wholes[size] = []byte(fakeupstream.LargeResult(kind, size))
			}
			res := bytes.Clone(wholes[size]) // the cut may reuse its input's room
			link := resultLink{uri: Scheme + strings.Repeat("x", 22), pages: 99, pageSize: limit, tool: "large", cap: limit}
			out := fitResult(res, limit, link)
			if len(out) > limit || !json.Valid(out) || !strings.Contains(string(out), `"uri":"`+link.uri+`"`) {
				t.Errorf("%s under %d: %d bytes, valid %v: %.500s", kind, limit, len(out), json.Valid(out), out)
			}
			if want := fmt.Sprintf("was cut to %s ", commas(len(out))); !strings.Contains(string(out), want) {
				t.Errorf("%s under %d: the note does not say %q", kind, limit, want)
			}
		}
	}
	for _, bad := range []string{`[1,2]`, `"text"`, `{"content":"no list"}`} {
		out := fitResult([]byte(bad+strings.Repeat(" ", 3000)), 2000, resultLink{why: "test"})
		if len(out) > 2000 || !json.Valid(out) || !strings.Contains(string(out), "could not be kept: test") {
			t.Errorf("%s: %s", bad, out)
		}
	}
}

// Whatever JSON an upstream answers with, the cut answer is valid JSON
// within the cap.
func FuzzFitResult(f *testing.F) {
	for _, kind := range []string{"text", "structured", "image", "mixed", "blocks"} {
		f.Add([]byte(fakeupstream.LargeResult(kind, 5000)), 2000)
	}
	f.Add([]byte(`{"content":[{"type":"text","text":"\u2028\u0000\ud800"}],"x":[1,2,3]}`), 1500)
	f.Add([]byte(`{"content":[{"type":"resource_link","uri":"`+strings.Repeat("u", 5000)+`"}]}`), 1500)
	f.Fuzz(func(t *testing.T, res []byte, limit int) {
		if !json.Valid(res) || limit < 1500 || limit > 1<<20 {
			return
		}
		out := fitResult(res, limit, resultLink{uri: Scheme + "id", pages: 3, pageSize: 100, tool: "t", cap: limit})
		if len(out) > limit || !json.Valid(out) {
			t.Fatalf("%d bytes (limit %d), valid %v: %.300s", len(out), limit, json.Valid(out), out)
		}
	})
}

// An upstream's answer of many tiny blocks costs the cut about its size,
// not its square (which took minutes for 100,000 blocks). Told by how the
// time grows from 1,000 blocks to 10,000 (10x for a cost linear in the
// size, 100x for its square), each the least CPU time of three runs, so
// that a busy machine, which stretches short runs on the clock more than
// long ones, does not fail it. (A square at 10,000 blocks still takes
// seconds beside milliseconds; 50,000 blocks on the clock cost the suite
// minutes under -race.) The large one is run again only while its least
// time so far is over the bound: a run that passes is enough, the verdict
// that of three runs, at a third of their CPU.
func TestFitResultManyBlocksQuickly(t *testing.T) {
	cut := func(block string, n int) time.Duration {
		res := []byte(`{"content":[` + strings.Repeat(block+",", n-1) + block + `]}`)
		runtime.GC() // the collection a run leaves is not the next one's
		start := cpuTime()
		out := fitResult(res, 2000, resultLink{uri: Scheme + "id", pages: 2})
		took := cpuTime() - start
		if len(out) > 2000 || !strings.Contains(string(out), "content blocks (") {
			t.Fatalf("%s x %d: %d bytes: %.300s", block, n, len(out), out)
		}
		return took
	}
	for _, block := range []string{`{}`, `{"type":"text","text":"a"}`, `{"type":"resource_link","uri":"x","name":"x"}`, `{"type":"image","data":"` + strings.Repeat("x", 60) + `"}`} {
		small, large := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
		for range 3 {
			small = min(small, cut(block, 1000))
		}
		ratio := 0.0
		for range 3 {
			large = min(large, cut(block, 10000))
			if ratio = float64(large) / float64(max(small, time.Microsecond)); ratio <= 70 { // a square is 100x
				break
			}
		}
		if ratio > 70 {
			t.Errorf("%s: 1,000 blocks in %v, 10,000 in %v: %.0fx for 10x the size", block, small, large, ratio)
		}
	}
}

// Members of megabytes beside content go (isError and a small _meta
// stay), named in the note, however many and however long their names.
func TestFitResultOtherMembers(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"content":[{"type":"text","text":"hi"}],"isError":true,"_meta":{"k":"v"}`)
	for i := range 2000 {
		fmt.Fprintf(&b, `,"%s%d":"%s"`, strings.Repeat("k", 100), i, strings.Repeat("v", 50))
	}
	b.WriteString(`}`)
	link := resultLink{uri: Scheme + "id", pages: 2, cap: 5000}
	out := fitResult([]byte(b.String()), 5000, link)
	var r struct {
		Content []struct{ Type, Text, URI string }
		IsError bool
		Meta    map[string]string `json:"_meta"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(out) > 5000 || !r.IsError || r.Meta["k"] != "v" || r.Content[0].Text != "hi" ||
		!strings.Contains(string(out), "1,997 more members") || !strings.Contains(string(out), `"uri":"`+link.uri+`"`) {
		t.Errorf("%v: %s", err, out)
	}
}
