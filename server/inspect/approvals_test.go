package inspect

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// fakeInbox records what the API asks of the hub's inbox.
type fakeInbox struct {
	list     approval.List
	approved map[string]approval.Options
	by       []string
	denied   []string
	revoked  []string
}

func (f *fakeInbox) Approvals() approval.List { return f.list }
func (f *fakeInbox) Approve(id, by string, o approval.Options) (*approval.Grant, error) {
	if id == "p2" && o.Session { // a call that came without a session
		return nil, approval.ErrNoSession
	}
	if id != "p1" {
		return nil, approval.ErrNoPending
	}
	f.approved[id] = o
	f.by = append(f.by, by)
	if o.Once() {
		return nil, nil
	}
	return &approval.Grant{ID: "g-1", Session: "http-secret-session", ApprovedBy: by}, nil
}
func (f *fakeInbox) Deny(id, by string) error {
	if id != "p1" {
		return approval.ErrNoPending
	}
	f.denied = append(f.denied, id+" by "+by)
	return nil
}
func (f *fakeInbox) Revoke(id, by string) error {
	if id != "g-1" {
		return approval.ErrNoGrant
	}
	f.revoked = append(f.revoked, id+" by "+by)
	return nil
}

// The API lists the inbox with session ids labelled, never as they are
// (an HTTP session's id addresses it), and passes approve (with grant
// options), deny and revoke to the hub as the "ui" approver; an id that
// is not there is 404, bad options 400.
func TestApprovalsAPI(t *testing.T) {
	f := &fakeInbox{approved: map[string]approval.Options{}, list: approval.List{
		Pending: []approval.Pending{{ID: "p1", Tool: "echo", Session: "http-secret-session", Time: time.Now()}},
		Grants:  []approval.Grant{{ID: "g-0", Session: "http-secret-session"}}}}
	i := New(Options{Approvals: f})
	defer i.Close()
	srv := httptest.NewServer(i.API())
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+Prefix+"api/"+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("GET", "approvals", "")
	var l approval.List
	if err := json.Unmarshal([]byte(body), &l); code != 200 || err != nil || len(l.Pending) != 1 || len(l.Grants) != 1 {
		t.Fatalf("list: %d %s", code, body)
	}
	if strings.Contains(body, "http-secret-session") || l.Pending[0].Session != sessionLabel("http-secret-session") {
		t.Errorf("a session's id shown: %s", body)
	}
	if code, body := do("POST", "approvals/p1/approve", `{"for":"1m","args":{"path":"/tmp/**"}}`); code != 200 ||
		!strings.Contains(body, `"g-1"`) || strings.Contains(body, "http-secret-session") {
		t.Errorf("approve with a grant: %d %s", code, body)
	}
	if o := f.approved["p1"]; o.For != approval.Duration(time.Minute) || o.Args["path"] != "/tmp/**" || f.by[0] != "ui" {
		t.Errorf("grant options passed: %+v by %v", o, f.by)
	}
	if code, body := do("POST", "approvals/p1/approve", ""); code != 200 || !strings.Contains(body, `"grant":null`) {
		t.Errorf("approve once: %d %s", code, body)
	}
	if code, body := do("POST", "approvals/p2/approve", `{"session":true}`); code != 400 || !strings.Contains(body, "--for or --calls") {
		t.Errorf("a session grant for a call without a session: %d %s", code, body)
	}
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"approvals/nope/approve", "", 404},
		{"approvals/p1/approve", `{"for":"soon"}`, 400},
		{"approvals/p1/approve", `{"args":{"path":"/tmp/**"}}`, 400},
		{"approvals/p1/approve", `{"calls":-1}`, 400},
		{"approvals/p1/approve", strings.Repeat(" ", maxApproveBody+1), 400},
		{"approvals/p1/deny", "", 204},
		{"approvals/nope/deny", "", 404},
		{"grants/g-1/revoke", "", 204},
		{"grants/nope/revoke", "", 404},
	} {
		if code, body := do("POST", tc.path, tc.body); code != tc.want {
			t.Errorf("POST %s: %d %s, want %d", tc.path, code, body, tc.want)
		}
	}
	if len(f.denied) != 1 || f.denied[0] != "p1 by ui" || len(f.revoked) != 1 || f.revoked[0] != "g-1 by ui" {
		t.Errorf("denied %v, revoked %v", f.denied, f.revoked)
	}
	if code, _ := do("GET", "approvals/p1/approve", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET approve: %d", code)
	}
}
