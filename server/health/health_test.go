package health

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Readiness before any server starts: a disabled group is settled, an
// enabled one is starting; HEAD gets the status alone. (The server
// package's tests drive a real hub from 503 to 200.)
func TestReadyBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		name, groups string
		code         int
		state        string
	}{
		{"disabled", "  g: {description: d, command: x, disabled: true}\n", http.StatusOK, "disabled"},
		{"starting", "  g: {description: d, command: x}\n", http.StatusServiceUnavailable, "starting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "state_dir: " + t.TempDir() + "\naudit: {path: \"off\"}\ngroups:\n" + tc.groups
			cfg, err := config.Parse("t.yaml", strings.NewReader(yaml))
			if err != nil {
				t.Fatal(err)
			}
			h := Ready(upstream.New(cfg, slog.New(slog.DiscardHandler)), false)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			var rep Report
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rec.Code != tc.code || rep.Ready != (tc.code == http.StatusOK) {
				t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
			}
			if len(rep.Groups) != 1 || rep.Groups[0].State != tc.state {
				t.Errorf("groups %+v", rep.Groups)
			}
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/readyz", nil))
			if rec.Code != tc.code || rec.Body.Len() != 0 {
				t.Errorf("HEAD: %d %q", rec.Code, rec.Body)
			}
		})
	}
}

// byToken sends a request with an Authorization header to the guarded
// handler, whatever the header says, and any other to the public one.
func TestByToken(t *testing.T) {
	public := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("public")) })
	guarded := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("guarded")) })
	h := byToken(public, guarded)
	for header, want := range map[string]string{"": "public", "Bearer x": "guarded", "Basic y": "guarded"} {
		req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Body.String() != want {
			t.Errorf("Authorization %q: %s", header, rec.Body)
		}
	}
}
