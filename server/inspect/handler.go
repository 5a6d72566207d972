package inspect

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
)

// Prefix is where the inspector is served: the page at Prefix, its API
// under Prefix+"api/".
const Prefix = "/ui/"

//go:embed page
var pageFiles embed.FS

// Page serves the page itself: HTML, CSS and JavaScript, embedded, with
// no data in them, so that a browser can load them by navigating to
// Prefix without a token. Mount it at Prefix behind the Origin and Host
// checks (httpguard.Guard.CheckPage); everything the page shows it fetches
// from API with the token.
func (i *Inspector) Page() http.Handler {
	sub, _ := fs.Sub(pageFiles, "page")
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Nothing but the page's own files may run or load: no CDN, no
		// inline script, and no other site may frame it.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == Prefix+"token-hint" {
			i.serveTokenHint(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// API serves what the page fetches, under Prefix+"api/": the traffic as
// server-sent events (history, then live), the upstreams, the client
// sessions, the history as JSONL, and clearing it. Mount it at
// Prefix+"api/" behind every check, the token included
// (httpguard.Guard.Check).
func (i *Inspector) API() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"api/events", i.serveEvents)
	mux.HandleFunc("GET "+Prefix+"api/upstreams", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, i.upstreams())
	})
	mux.HandleFunc("GET "+Prefix+"api/clients", func(w http.ResponseWriter, _ *http.Request) {
		clients := []Client{}
		if i.opts.Clients != nil {
			clients = append(clients, i.opts.Clients()...)
		}
		for n := range clients {
			clients[n].ID = sessionLabel(clients[n].ID)
		}
		writeJSON(w, clients)
	})
	mux.HandleFunc("GET "+Prefix+"api/export", i.serveExport)
	i.mountApprovals(mux)
	mux.HandleFunc("POST "+Prefix+"api/clear", func(w http.ResponseWriter, _ *http.Request) {
		i.Clear()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
