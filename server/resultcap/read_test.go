package resultcap

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A cut result is read back in pages by its caller alone: another
// caller, an unknown id and a URI of no result are told apart only by
// whether the URI names a result at all; a page it does not have is
// invalid params; the pages together are the whole.
func TestCutReadBack(t *testing.T) {
	s := New(Options{})
	whole := []byte(fakeupstream.LargeResult("text", 100000))
	if out := s.Cut(whole, len(whole), 1, Call{Caller: "a"}); string(out) != string(whole) {
		t.Fatal("a result within the cap is cut")
	}
	out := s.Cut(whole, 20000, 1, Call{Caller: "a", Group: "g", Server: "s", Tool: "large", Args: json.RawMessage(`{}`)})
	uri := linkURI(string(out))
	if len(out) > 20000 || uri == "" {
		t.Fatalf("%d bytes, uri %q", len(out), uri)
	}
	if r, _, named := s.Find(uri, "b"); r != nil || !named {
		t.Errorf("another caller: %v %v", r, named)
	}
	for _, u := range []string{Scheme, "dynamic-mcp://other/x"} {
		if r, _, named := s.Find(u, "a"); r != nil || named {
			t.Errorf("%s: %v %v", u, r, named)
		}
	}
	r, query, _ := s.Find(uri+"?page=99", "a")
	if r == nil || r.Tool != "large" || r.Group != "g" {
		t.Fatalf("the caller's own: %+v", r)
	}
	var e *jsonrpc.Error
	if _, err := r.Page(query); !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("page 99: %v", err)
	}
	var read []byte
	for p := 1; ; p++ {
		res, err := r.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Contents []struct{ Text string }
			Meta     struct {
				Pages int `json:"dynamic-mcp/pages"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(res, &a); err != nil || len(a.Contents) != 1 {
			t.Fatalf("%v: %.300s", err, res)
		}
		read = append(read, a.Contents[0].Text...)
		if p == a.Meta.Pages {
			break
		}
	}
	if string(read) != string(whole) {
		t.Errorf("the pages give %d bytes, not the %d cut", len(read), len(whole))
	}
	if cut, kept, _, _ := s.Stats(); cut != 1 || kept != 1 {
		t.Errorf("%d cut, %d kept", cut, kept)
	}
}

// linkURI is the URI of the whole result a cut answer links to.
func linkURI(s string) string {
	i := strings.Index(s, `"uri":"`+Scheme)
	if i < 0 {
		return ""
	}
	s = s[i+len(`"uri":"`):]
	return s[:strings.IndexByte(s, '"')]
}
