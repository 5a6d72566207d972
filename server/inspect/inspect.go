// Package inspect is the hub's live inspector: a traffic.Observer that
// keeps a bounded history of the requests the hub answers, each joined
// with its policy decision, its hops to upstreams, the notifications and
// upstream requests that came during it, and its answer; and the web page
// that shows them live, with the hub's upstreams and client sessions.
//
// Recording is cheap, for it runs on the hub's request goroutines: each
// message body is copied once, cut at a size cap, and nothing is decoded,
// redacted or pretty-printed there. Encoding for the page (and the
// redaction with it) happens on the page's own stream goroutine, or the
// export's, and a page that does not keep up loses events, never holds up
// the hub.
//
// Secrets are redacted before anything is shown or exported (a body when
// it is encoded for a reader, an error's message when it is kept): the
// value of any member,
// at any depth, whose key (case, '-' and '_' ignored) is authorization,
// proxy-authorization, cookie, set-cookie, password, passwd, passphrase,
// secret, token, api_key, x-api-key, private_key or credentials, or ends
// in token, secret, password, api_key or private_key (progressToken
// excepted), becomes "[redacted]"; and so do the secrets strings, error
// messages and stderr lines hold in known shapes: a URL's password,
// NAME=value and "Name: value" for such a name, and credentials after
// Bearer or Basic (types/redact, whose JSON and Text it uses).
//
// The package sits beside server, not under it: the hub knows only the
// traffic.Observer it is given, and cmd wires the inspector to the hub.
package inspect

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Defaults of Options.
const (
	DefaultRequests   = 1000
	DefaultMaxMessage = 64 << 10
	DefaultMaxBytes   = 64 << 20
)

// Options configure an Inspector; zero values mean the defaults.
type Options struct {
	// Requests is how many rows the history keeps; default
	// DefaultRequests (1,000).
	Requests int
	// MaxMessage caps each message body kept; a longer one is cut and
	// marked truncated. Default DefaultMaxMessage (64 KiB).
	MaxMessage int
	// MaxBytes caps the bodies the history holds in all; past it the
	// oldest rows go first. Default DefaultMaxBytes (64 MiB).
	MaxBytes int
	// Upstreams is the manager whose groups and servers the page shows;
	// nil shows none.
	Upstreams *upstream.Manager
	// Clients lists the client sessions (server.Hub.Sessions().Info); nil shows
	// none.
	Clients func() []Client
	// ToolsList is the tools/list result the hub would give in a mode
	// (server.Hub.ToolsListFor), to show what each mode costs the client;
	// nil shows nothing.
	ToolsList func(config.Mode) json.RawMessage
	// Approvals is the hub's approval inbox, which the page shows and
	// answers; nil shows none.
	Approvals Approver
	// Logger gets what the inspector has to say; nil discards it.
	Logger *slog.Logger
}

// Client is one client session as the page shows it.
type Client struct {
	ID              string          `json:"id"` // the session's id; the page is shown its label (sessionLabel)
	Transport       string          `json:"transport"`
	User            string          `json:"user,omitempty"`    // the caller's name, else subject (routes.SessionInfo.User)
	Subject         string          `json:"subject,omitempty"` // the caller's key: jwt:SUBJECT, token:NAME
	Profile         string          `json:"profile,omitempty"` // the profile the session sees
	Name            string          `json:"name,omitempty"`
	Version         string          `json:"version,omitempty"`
	ProtocolVersion string          `json:"protocol_version,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"` // as initialize declared them
	Mode            string          `json:"mode,omitempty"`         // the mode the session is shown
	ModeWhy         string          `json:"mode_why,omitempty"`     // why (mode: auto chooses per client)
	Inflight        int             `json:"inflight"`
	Dropped         uint64          `json:"dropped"`
}

// Inspector records the hub's traffic (it is a traffic.Observer) and
// serves the page that shows it (Handler). Close ends its streams.
type Inspector struct {
	opts   Options
	logger *slog.Logger
	up     *upstreamTracker

	mu      sync.Mutex // guards the history, the rows in it, seq, labels, subs and closed
	history ring
	labels  labels // the sessions' labels, hashed once each
	seq     uint64
	subs    map[*subscriber]struct{}
	closed  bool

	exports      chan struct{} // one token an export being written (see maxExports)
	writeTimeout time.Duration // bounds each write to a page or an export

	done chan struct{} // closed by Close: streams end
	once sync.Once

	hint tokenHint // where the login dialog says the token is
}

// New builds an inspector. It starts watching opts.Upstreams at once;
// Close stops it.
func New(opts Options) *Inspector {
	if opts.Requests <= 0 {
		opts.Requests = DefaultRequests
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	i := &Inspector{opts: opts, logger: logger, subs: map[*subscriber]struct{}{}, done: make(chan struct{}),
		history:      ring{rows: make([]*row, opts.Requests), maxBytes: opts.MaxBytes},
		exports:      make(chan struct{}, maxExports),
		writeTimeout: writeTimeout}
	i.up = newUpstreamTracker(opts.Upstreams)
	return i
}

// Close ends every stream to a page and stops watching the upstreams.
// The inspector still records afterwards, which costs little, so that
// closing it before the hub stops is safe.
func (i *Inspector) Close() error {
	i.once.Do(func() {
		i.mu.Lock()
		i.closed = true
		i.mu.Unlock()
		close(i.done)
		i.up.close()
	})
	return nil
}

// Clear empties the history and tells the pages watching.
func (i *Inspector) Clear() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.history.clear()
	i.publish(event{kind: evClear})
}

// rows are snapshots of the history's rows, oldest first.
func (i *Inspector) rows() []*row {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.history.snapshots()
}

// add puts r into the history as the newest row, numbering it. The caller
// holds i.mu.
func (i *Inspector) add(r *row) {
	i.seq++
	r.Seq = i.seq
	i.history.push(r)
}

// grow counts n more bytes kept for r against the history's budget,
// pending or not; a row out of the history keeps nothing (see
// row.release). The caller holds i.mu.
func (i *Inspector) grow(r *row, n int) {
	if !r.inRing {
		return
	}
	r.bytes += n
	i.history.bytes += n
	i.history.trim()
}
