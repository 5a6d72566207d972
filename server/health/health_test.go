package health

import (
	"encoding/json"
	"errors"
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

// A component that fails (the audit trail) makes the hub not ready, the
// reason shown only with reasons; one that works changes nothing.
func TestReadyWithComponents(t *testing.T) {
	yaml := "state_dir: " + t.TempDir() + "\naudit: {path: \"off\"}\ngroups:\n  g: {description: d, command: x, disabled: true}\n"
	cfg, err := config.Parse("t.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	m := upstream.New(cfg, slog.New(slog.DiscardHandler))
	var failure error
	audit := Component{Name: "audit", Check: func() error { return failure }}
	for _, tc := range []struct {
		name    string
		failure error
		reasons bool
		code    int
		want    ComponentState
	}{
		{"working", nil, true, http.StatusOK, ComponentState{Name: "audit", State: "ok"}},
		{"failing, public", errors.New("audit trail: write /x: no space left on device"), false, http.StatusServiceUnavailable,
			ComponentState{Name: "audit", State: "failing"}},
		{"failing, with reasons", errors.New("audit trail: write /x: no space left on device\nmore"), true, http.StatusServiceUnavailable,
			ComponentState{Name: "audit", State: "failing", Error: "audit trail: write /x: no space left on device"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failure = tc.failure
			rec := httptest.NewRecorder()
			Ready(m, tc.reasons, audit).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			var rep Report
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rec.Code != tc.code || rep.Ready != (tc.code == http.StatusOK) {
				t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
			}
			if len(rep.Components) != 1 || rep.Components[0] != tc.want {
				t.Errorf("components %+v, want %+v", rep.Components, tc.want)
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
