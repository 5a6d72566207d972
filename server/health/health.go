// Package health answers a load balancer's two questions: is the hub alive
// (/healthz), and is it ready (/readyz), that is, has every enabled group
// settled, each of its servers either ready or failed with a reason, and
// does every component the hub cannot serve without (the audit trail)
// work. A group that keeps failing does not hold readiness back: the hub
// serves the others, and says which is down and why.
package health

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Report is the body of /readyz.
type Report struct {
	Ready  bool    `json:"ready"`
	Groups []Group `json:"groups"`
	// Components are the parts of the hub besides its upstreams that
	// readiness depends on, such as the audit trail.
	Components []ComponentState `json:"components,omitempty"`
}

// Component is a part of the hub that readiness depends on: while Check
// returns an error, the hub is not ready, and the error says why.
type Component struct {
	Name  string
	Check func() error
}

// ComponentState is one component's state, ok or failing, with the
// reason it fails where the report may carry reasons.
type ComponentState struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// Group is one group's state: ready when every enabled server is,
// starting while any is, failed when none is ready, degraded when some
// are, disabled when every server is.
type Group struct {
	Name    string   `json:"name"`
	State   string   `json:"state"`
	Servers []Server `json:"servers"`
}

// Server is one server's state, with the reason it failed where the
// report may carry reasons.
type Server struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Protocol string `json:"protocol_version,omitempty"`
	Error    string `json:"error,omitempty"`
}

// maxReason caps a reason's length: its first line is what says why.
const maxReason = 300

// Check reports the readiness of m and of components. With reasons, a
// failed server's or component's report carries its error, which can name
// hosts, paths and commands: give it only to those who hold the hub's
// token.
func Check(m *upstream.Manager, reasons bool, components ...Component) Report {
	r := Report{Ready: true, Groups: []Group{}}
	for _, g := range m.Groups() {
		gr := Group{Name: g.Config.Name, Servers: []Server{}}
		var ready, starting, enabled int
		for _, s := range g.Servers {
			st := s.Status()
			sr := Server{Name: s.Config.Name, State: st.State.String(), Protocol: st.ProtocolVersion}
			if reasons && st.Err != nil {
				sr.Error = shortReason(st.Err)
			}
			gr.Servers = append(gr.Servers, sr)
			if s.Config.Disabled {
				continue
			}
			enabled++
			switch st.State {
			case upstream.StateReady:
				ready++
			case upstream.StateStarting, upstream.StateStopped:
				// Stopped: the hub is shutting down, and a balancer
				// should send no more.
				starting++
			}
		}
		switch {
		case enabled == 0:
			gr.State = "disabled"
		case starting > 0:
			gr.State, r.Ready = "starting", false
		case ready == enabled:
			gr.State = "ready"
		case ready == 0:
			gr.State = "failed"
		default:
			gr.State = "degraded"
		}
		r.Groups = append(r.Groups, gr)
	}
	for _, c := range components {
		cs := ComponentState{Name: c.Name, State: "ok"}
		if err := c.Check(); err != nil {
			cs.State, r.Ready = "failing", false
			if reasons {
				cs.Error = shortReason(err)
			}
		}
		r.Components = append(r.Components, cs)
	}
	return r
}

func shortReason(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > maxReason {
		s = s[:maxReason-3] + "..."
	}
	return s
}

// Ready serves /readyz: 200 when every enabled group has settled and
// every component works, 503 while any group is starting (or the hub is
// stopping) or a component fails, with the Report as JSON either way;
// reasons as in Check.
func Ready(m *upstream.Manager, reasons bool, components ...Component) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := Check(m, reasons, components...)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !rep.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		if r.Method != http.MethodHead {
			_ = json.NewEncoder(w).Encode(rep)
		}
	})
}

// Alive serves /healthz: 200 "ok" for as long as the hub answers at all.
func Alive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "ok\n")
	})
}

// Mount serves /healthz and /readyz (of m and components) on mux for
// anyone, the reasons of /readyz behind guard (the caller's token check).
// Both the HTTP face and the inspector's own address (serve --ui) mount
// them so.
func Mount(mux *http.ServeMux, m *upstream.Manager, guard func(http.Handler) http.Handler, components ...Component) {
	mux.Handle("/healthz", Alive())
	mux.Handle("/readyz", byToken(Ready(m, false, components...), guard(Ready(m, true, components...))))
}

// byToken serves a request that carries an Authorization header with
// guarded, which must check the token (so that a wrong one is refused and
// counted like any other), and every other request with public. A
// balancer's probe needs no token; a person who shows one sees more.
func byToken(public, guarded http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			guarded.ServeHTTP(w, r)
			return
		}
		public.ServeHTTP(w, r)
	})
}
