// Package config is the schema of dynamic-mcp's YAML file and its one
// pipeline: Parse (strict, with file and line on every error), environment
// substitution, defaults and validation, all before anything starts.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
)

// Mode says how the hub exposes upstream tools to the downstream client.
type Mode string

const (
	// ModeDynamic shows the client two meta-tools, get_dynamic_tools and
	// call_dynamic_tool, and hands out a group's schemas on demand.
	ModeDynamic Mode = "dynamic"
	// ModeFlat lists every upstream tool directly, named <group>__<tool>.
	ModeFlat Mode = "flat"
	// ModeAuto is flat for a client known to search tools itself and
	// dynamic for the rest, per session by its clientInfo (see
	// server/clients/mode.go). What import writes into a new config; a config
	// without mode: stays dynamic.
	ModeAuto Mode = "auto"
)

// Transport names how the hub reaches an upstream server.
type Transport string

const (
	// TransportStdio starts the server as a child process (command:).
	TransportStdio Transport = "stdio"
	// TransportStreamableHTTP speaks Streamable HTTP to url:.
	TransportStreamableHTTP Transport = "streamable-http"
	// TransportSSE speaks the legacy HTTP+SSE transport to url:.
	TransportSSE Transport = "sse"
)

// Defaults of the settings block.
const (
	DefaultConnectTimeout  = 10 * time.Second
	DefaultListTimeout     = 10 * time.Second
	DefaultStopGrace       = 5 * time.Second
	DefaultSharedIdle      = 30 * time.Second
	DefaultPromptTimeout   = 2 * time.Minute
	DefaultStartupWait     = 5 * time.Second
	DefaultCallTimeout     = 60 * time.Second
	DefaultPageSize        = 100
	DefaultMaxMessageSize  = 10 << 20
	DefaultSessionInflight = 256
	// DefaultMaxSessionProcesses caps the connections of servers with
	// isolation: per-session kept for client sessions at once, across
	// servers: 64 Node servers are some 6 GB.
	DefaultMaxSessionProcesses = 64
	DefaultSessionProcessIdle  = 5 * time.Minute
	// DefaultClientShare is the part of a cap one client (credential) may
	// hold when the hub has several (http.client_share).
	DefaultClientShare = 0.5

	DefaultRetryAttempts     = 3
	DefaultRetryInitial      = time.Second
	DefaultReconnectInterval = 30 * time.Second
)

// Retry says how a server that fails to connect, or exits, is tried again:
// Attempts tries with exponential backoff and jitter from InitialInterval,
// then one try every ReconnectInterval for as long as the hub runs.
type Retry struct {
	// Attempts before the server is only retried every ReconnectInterval.
	// Default 3.
	Attempts int
	// InitialInterval is the wait after the first failure, doubling after
	// each. Default 1s.
	InitialInterval time.Duration
	// ReconnectInterval is the wait between tries after that. Default 30s.
	ReconnectInterval time.Duration
}

// orDefaults fills r's unset fields from d.
func (r Retry) orDefaults(d Retry) Retry {
	if r.Attempts == 0 {
		r.Attempts = d.Attempts
	}
	if r.InitialInterval == 0 {
		r.InitialInterval = d.InitialInterval
	}
	if r.ReconnectInterval == 0 {
		r.ReconnectInterval = d.ReconnectInterval
	}
	return r
}

// Config is a whole dynamic-mcp file.
type Config struct {
	// Path is the file the config was read from ("" for a reader).
	Path string
	// CLI writes the dynamic-mcp commands hints tell the user to run,
	// with -c Path when a command would not find this config without it.
	CLI CLI
	// Mode is dynamic (the default), flat or auto.
	Mode Mode
	// Settings holds hub-wide timeouts and limits.
	Settings Settings
	// Groups in config order: the order the client sees.
	Groups []*Group
	// Profiles are the views a client may choose (serve --profile NAME,
	// or /mcp/p/NAME over HTTP), by name.
	Profiles map[string]*Profile
	// Clients are rules that shape what a client is shown by its name,
	// first match wins.
	Clients []ClientRule
	// Profile is the profile this config was narrowed to by WithProfile,
	// "" for the whole config.
	Profile string
	// Policy are global rules, evaluated after a group's own.
	Policy []Rule
	// PolicyDefault applies when no rule matches: allow (the default) or deny.
	PolicyDefault Action
	// Audit says where the audit trail goes.
	Audit Audit
	// StateDir holds tool pins; default $DYNAMIC_MCP_HOME or ~/.dynamic-mcp.
	StateDir string
	// EnvUses names the environment variables the file reads (${VAR} and
	// ${VAR:-default}; not CONFIG_DIR or secrets), sorted: the bridges of
	// one shared hub must agree on their values.
	EnvUses []string
	// SecretUses says where the config uses each ${secret:NAME}: name ->
	// the dotted keys, in the order met.
	SecretUses map[string][]string
	// secretValues are what RedactSecrets replaces.
	secretValues *redact.Secrets
	// HTTP configures serving over HTTP (serve --http).
	HTTP HTTP
	// Store is the PostgreSQL URL of the state every replica shares
	// (sign-ins, tool pins, grants, rate counters); "" (the default)
	// keeps it in StateDir.
	Store string
}

// HTTP configures the hub's HTTP face.
type HTTP struct {
	// Token is the bearer token clients must send. Default
	// $DYNAMIC_MCP_TOKEN; with neither, one is generated at start and
	// printed to stderr. It is the credential named "default".
	Token string
	// Tokens are more credentials, by name: each a client of its own,
	// whose sessions no other credential can reach. Each token is at
	// least 16 bytes and differs from every other and from Token.
	Tokens map[string]string
	// AllowedOrigins are browser origins allowed besides loopback ones.
	AllowedOrigins []string
	// MaxSessions caps the sessions open at once. A new session beyond
	// it closes the least recently used idle one (no stream open, no
	// request in flight), or is refused with 503 when none is idle.
	// Default 1000.
	MaxSessions int
	// BodyTimeout bounds reading one request body. Default 30s.
	BodyTimeout time.Duration
	// MaxInflight caps the client requests being answered at once across
	// all sessions (each session has its own cap, settings.session_inflight); more get
	// 503. Default 1024.
	MaxInflight int
	// ClientShare is the part of MaxInflight, of MaxSessions, of
	// MaxBodyMemory and of settings.max_session_processes (and each per-session server's 32)
	// one credential may hold, when the hub has more than one: "50%" or
	// 0.5 in the file. Default 0.5; 1 turns shares off.
	ClientShare float64
	// MaxBodyMemory caps the bytes of request bodies being read and
	// handled at once; a body that does not fit waits, then gets 503.
	// Default 128 MiB.
	MaxBodyMemory int
	// MaxAuthFailures is how many requests with a missing or wrong token
	// one client address may make in a minute before it is answered 429
	// until the minute is over. Default 10.
	MaxAuthFailures int
	// Auth, when set, lets callers in with JWT access tokens of an
	// authorization server besides the static tokens (http.auth; see
	// HTTPAuth). nil when the file has none.
	Auth *HTTPAuth
	// SessionKeys, when set, seal each session's small state into its
	// Mcp-Session-Id (AES-256-GCM), so that any replica with the same
	// keys resumes it: the first key seals, every key opens (rotation).
	// Each is 32 bytes. Default none: session ids are random and a session
	// lives in the process that made it.
	SessionKeys [][]byte
	// DrainTimeout bounds how long a replica told to stop (SIGTERM) lets
	// the calls in flight finish. Default 30s.
	DrainTimeout time.Duration
	// TrustedProxies are the balancers in front of the hub (CIDR
	// prefixes): a request from one of them is taken to come from the
	// client its X-Forwarded-For (or Forwarded) header names, for the
	// failed-token lockout and the logs. Default none: every request's
	// client is its direct peer, and the headers are ignored.
	TrustedProxies []netip.Prefix
}

// Defaults of the http block.
const (
	DefaultMaxSessions     = 1000
	DefaultBodyTimeout     = 30 * time.Second
	DefaultMaxInflight     = 1024
	DefaultMaxBodyMemory   = 128 << 20
	DefaultMaxAuthFailures = 10
)

// DefaultCredential is the name of http.token's credential.
const DefaultCredential = "default"

// MinTokenBytes is how long a token of http.tokens must be at least.
const MinTokenBytes = 16

// Credentials are the configured tokens by name: http.token as
// "default", and http.tokens. Empty when none is configured.
func (h HTTP) Credentials() map[string]string {
	out := make(map[string]string, len(h.Tokens)+1)
	for name, t := range h.Tokens {
		out[name] = t
	}
	if h.Token != "" {
		out[DefaultCredential] = h.Token
	}
	return out
}

// LogValue keeps the tokens out of logs: only the credentials' names.
func (h HTTP) LogValue() slog.Value {
	token := ""
	if h.Token != "" {
		token = "REDACTED"
	}
	names := slices.Sorted(maps.Keys(h.Tokens))
	return slog.GroupValue(slog.String("token", token), slog.Any("tokens", names), slog.Any("allowed_origins", h.AllowedOrigins),
		slog.Int("max_sessions", h.MaxSessions), slog.Duration("body_timeout", h.BodyTimeout), slog.Int("max_inflight", h.MaxInflight),
		slog.Int("max_body_memory", h.MaxBodyMemory), slog.Int("max_auth_failures", h.MaxAuthFailures))
}

// Action is what a policy rule does with a call it matches.
type Action string

const (
	ActionAllow  Action = "allow"  // let the call through
	ActionDeny   Action = "deny"   // answer -32001; nothing reaches the upstream
	ActionLog    Action = "log"    // let it through, and log it
	ActionPrompt Action = "prompt" // ask the user through the client (elicitation)
)

// Rule is one policy rule. A rule with tool: applies to tool calls, uri: to
// resource reads, prompt: to prompt gets; a rule with none of them applies
// to all three.
type Rule struct {
	Name        string            // shown in errors and the audit trail; default group.policy[i]
	Action      Action            // required
	Tool        string            // glob on the tool's name (as its server calls it)
	Args        map[string]string // dotted argument path (keys without regard to case; "*" for any value at any depth) -> glob on its value
	Server      string            // only calls to this server of the group
	URI         string            // glob on a resources/read URI
	Prompt      string            // glob on a prompts/get name
	Description string            // the message of a -32001 answer
	Rate        *RateLimit        // rate: N/period with per: and then:; nil (the default) for no limit
	Line        int
}

// Filter is a deny-list and an allow-list of RE2 patterns: a name is
// hidden when a deny pattern matches it, or when allow patterns are given
// and none matches.
type Filter struct {
	Deny  []*regexp.Regexp
	Allow []*regexp.Regexp
}

// Hides reports whether the filter hides any of names.
func (f Filter) Hides(names ...string) bool {
	for _, n := range names {
		for _, re := range f.Deny {
			if re.MatchString(n) {
				return true
			}
		}
	}
	if len(f.Allow) == 0 {
		return false
	}
	for _, n := range names {
		for _, re := range f.Allow {
			if re.MatchString(n) {
				return false
			}
		}
	}
	return true
}

// PinOnChange is what happens to a tool whose definition changed since it
// was first seen.
type PinOnChange string

const (
	PinBlock PinOnChange = "block" // withhold it until `pin accept` (default)
	PinWarn  PinOnChange = "warn"  // serve it, and log the change
)

// Audit configures the audit trail.
type Audit struct {
	// Path of the JSON-lines file; default <state dir>/audit.jsonl. "off"
	// turns the trail off.
	Path string
	// Arguments puts tool arguments in the trail. Default false.
	Arguments bool
	// Required makes calls that would be audited fail closed, with a
	// JSON-RPC error, while the trail cannot take their records (a
	// failing disk, a queue full past its wait). Default false: such
	// records are counted as lost, logged and shown in /readyz, and the
	// calls go on. It needs a trail: path "off" with it is an error.
	Required bool
}

// Settings are hub-wide knobs; every field has a default.
type Settings struct {
	// ConnectTimeout bounds starting and initializing one upstream. Default
	// 10s; 2m for a server a package runner starts (npx, uvx, bunx, pnpm
	// dlx, pipx run, docker run), unless the file sets it (see
	// Server.ConnectTimeout).
	ConnectTimeout time.Duration
	// ListTimeout bounds one tools/prompts/resources list page. Default 10s.
	ListTimeout time.Duration
	// CallTimeout bounds one tool call, prompt get or resource read. Default 60s;
	// a server's own timeout: overrides it.
	CallTimeout time.Duration
	// PageSize is how many prompts, resources or templates one page of a list
	// the client gets holds. Default 100.
	PageSize int
	// MaxMessageSize is the largest message read from the client or from an
	// upstream, in bytes: a line on stdio; over HTTP a response body, or
	// one event of an SSE stream. Default 10 MiB; "20MiB" and "512KiB" are
	// accepted in the file.
	MaxMessageSize int
	// Retry is how failed servers are tried again; a server's own retry:
	// overrides it key by key.
	Retry Retry
	// StartupWait is how long a list asked while upstreams are still
	// starting waits for them before it answers with what is ready (and a
	// call to a tool not known yet, for its upstream). Default 5s.
	StartupWait time.Duration
	// SessionInflight caps the requests of one client session being
	// answered at once (stdio, or one HTTP session); more are answered
	// -32000 at once. Default 256.
	SessionInflight int
	// MaxSessionProcesses caps the connections (each usually a child
	// process) that servers with isolation: per-session keep for client
	// sessions at once, all servers together; each server has its own cap
	// of 32 besides. A session's call beyond it fails at once. Default 64.
	MaxSessionProcesses int
	// SessionProcessIdle is how long a client session's own connection
	// to a server (isolation: per-session) lives without a request on it
	// before it is closed; the session's next call starts it again.
	// Default 5m.
	SessionProcessIdle time.Duration
	// StopGrace is each wait of the stop ladder: a child gets StopGrace to
	// exit after its stdin is closed, then StopGrace after SIGTERM, before
	// SIGKILL. Default 5s.
	StopGrace time.Duration
	// Search says whether dynamic mode offers search_dynamic_tools: auto
	// (the default) when the ready groups hold more than SearchAutoTools
	// tools, on, or off.
	Search SearchMode
	// MaxTools caps the tools tools/list shows, 0 for no cap: the first
	// MaxTools in config order are listed. Tools past the cap stay
	// callable by name (and findable by search in dynamic mode); the cap
	// answers clients that read only so many (Cursor: 40).
	MaxTools int
	// Shared says whether serve on stdio joins the one hub running for
	// this config and user (a bridge to it, started if none runs): auto
	// (the default) or off (one hub per process, as serve --standalone).
	// Not on Windows, where it is always off.
	Shared SharedMode
	// SharedIdle is how long a shared hub keeps running after its last
	// client left. Default 30s.
	SharedIdle time.Duration
	// PromptTimeout bounds how long a `prompt` rule's call waits for a
	// person's answer (the client's elicitation, or the approval inbox)
	// before it is denied. Default 2m.
	PromptTimeout time.Duration
	// Notify shows a desktop notification (notify-send, osascript) for
	// each call that comes to the approval inbox. Default false.
	Notify bool
	// MaxResult caps the bytes of a tool call's result the client is
	// answered with, 0 (the default) for no cap. A result over it is cut
	// (head and tail of its texts, with a note of the sizes) and kept
	// whole for the session, which reads it in pages at
	// dynamic-mcp://results/<id> (see server/resultcap). "20KB" (20,000
	// bytes), "20KiB", "25k tokens" (BytesPerToken bytes each) are
	// accepted; at least MinMaxResult bytes. A clients: rule's or a
	// profile's max_result replaces it for those clients.
	MaxResult int
	// ValidateArgs says whether a tools/call's arguments are checked
	// against the tool's inputSchema before the call leaves the hub: on
	// (the default) or off. A group's own validate_args overrides it.
	ValidateArgs Switch
	// Cooperative says whether the hub serves the cooperative policy tools
	// (checkIntent, requestPermission, reportAction, getPolicy) beside the
	// client's other tools: on, or off (the default). A profile's
	// cooperative replaces it for that profile's clients.
	Cooperative Switch
}

// Switch is a setting that is on or off.
type Switch string

const (
	SwitchOn  Switch = "on"
	SwitchOff Switch = "off"
)

// ValidatesArgs says whether calls to g's tools have their arguments
// checked against the tool's inputSchema: g's validate_args when it sets
// one, else settings.validate_args.
func (s Settings) ValidatesArgs(g *Group) bool {
	if g != nil && g.ValidateArgs != "" {
		return g.ValidateArgs != SwitchOff
	}
	return s.ValidateArgs != SwitchOff
}

// Cooperates says whether the cooperative policy tools are served.
func (s Settings) Cooperates() bool { return s.Cooperative == SwitchOn }

// SharedMode says whether serve on stdio shares one hub per config.
type SharedMode string

const (
	SharedAuto SharedMode = "auto" // join or start the config's hub
	SharedOff  SharedMode = "off"  // one hub per process
)

// SearchMode says when dynamic mode offers search_dynamic_tools.
type SearchMode string

const (
	SearchAuto SearchMode = "auto" // when the ready groups hold more than SearchAutoTools tools
	SearchOn   SearchMode = "on"
	SearchOff  SearchMode = "off" // the client sees the two original meta-tools only
)

// SearchAutoTools is how many tools the ready groups must hold, beyond
// which search: auto offers search_dynamic_tools. Below it a model reads a
// group or two with get_dynamic_tools at little cost, and a third
// meta-tool would only be one more thing in its context.
const SearchAutoTools = 40

// ServerSettings are the settings that shape a running server: when one
// changes on reload, the server is restarted.
type ServerSettings struct {
	ConnectTimeout time.Duration
	ListTimeout    time.Duration
	MaxMessageSize int
	StopGrace      time.Duration
}

// ForServer picks the settings that shape a running server.
func (s Settings) ForServer() ServerSettings {
	return ServerSettings{ConnectTimeout: s.ConnectTimeout, ListTimeout: s.ListTimeout, MaxMessageSize: s.MaxMessageSize, StopGrace: s.StopGrace}
}

// Group is a named set of upstream servers with a description the LLM reads.
type Group struct {
	// Name is the group's key in the file; it prefixes tool names in flat mode.
	Name string
	// Description tells the LLM what the group is for. Required.
	Description string
	// Prefix says whether flat mode names this group's tools <group>__<tool>
	// (true, the default) or leaves them unprefixed.
	Prefix bool
	// Instructions says whether the instructions the group's servers give
	// in their initialize (or server/discover) result reach the client:
	// in the hub's own initialize result, headed by the group and cut to
	// a bound, and whole in get_dynamic_tools' answer for the group (true,
	// the default). false leaves them out of both.
	Instructions bool
	// Servers in config order; a group with one inline server has one named
	// after the group.
	Servers []*Server
	// Tools, Prompts and Resources hide what their patterns say (deny:,
	// allow:, prompts:, resources:).
	Tools, Prompts, Resources Filter
	// Policy are the group's rules, evaluated before the global ones.
	Policy []Rule
	// PinOnChange is block (default) or warn.
	PinOnChange PinOnChange
	// Expose are tools that dynamic mode lists directly beside its
	// meta-tools, named as in flat mode; none by default. A name the group
	// does not have (or hides) is a warning of the running hub.
	Expose []string
	// ValidateArgs is on or off to override settings.validate_args for
	// this group's tools; "" (the default) follows the setting.
	ValidateArgs Switch
	// Line is where the group starts in the file.
	Line int
}

// Server is one upstream MCP server.
type Server struct {
	// Name is the server's key under servers:, or the group name when inline.
	Name string
	// Group is the name of the group the server belongs to.
	Group string
	// Transport is stdio when Command is set; streamable-http or sse with URL.
	// With a URL and no transport given it is "" and the hub tries Streamable
	// HTTP first.
	Transport Transport
	// Command and Args start a stdio server. A relative Command with a
	// slash in it (./server.sh, bin/server) is made absolute against the
	// config file's directory by Parse; one without (npx, node) is looked
	// up in PATH.
	Command string
	Args    []string
	// Env is set over the hub's environment for the child, which gets it
	// without the hub's DYNAMIC_MCP_* variables and without any variable
	// that holds one of Hide's values.
	Env map[string]string
	// Cwd is the child's working directory, absolute after Parse; default
	// the config file's directory (the hub's for a config read without a
	// file name). A relative cwd: is relative to the config file's
	// directory, so relative paths in args mean "next to the config".
	Cwd string
	// Hide are the hub's secrets that the child must not see under any
	// name: Parse puts http.token here when it is set.
	Hide []string
	// URL of a remote server.
	URL string
	// Headers go on every HTTP request to a remote server.
	Headers map[string]string
	// Timeout bounds one call to this server; default settings.call_timeout.
	Timeout time.Duration
	// ConnectTimeout bounds starting and initializing this server, 0 for
	// settings.connect_timeout. Parse sets it for a server a package
	// runner starts (npx, uvx, docker run ...; see PackageRunner) while
	// settings.connect_timeout is not in the file: the longer of
	// DefaultRunnerConnectTimeout (2m) and the server's timeout:, as its
	// first start downloads the package.
	ConnectTimeout time.Duration
	// Retry is settings.retry with this server's own retry: keys applied.
	Retry Retry
	// OAuth configures `auth login` for a url: server that needs it.
	OAuth OAuth
	// Disabled servers are parsed and validated but never started.
	Disabled bool
	// Isolation is shared (default: one connection serves every client
	// session) or per-session: each client session that calls the server
	// gets a connection of its own, so that the server's sampling,
	// elicitation and roots requests, and any state it keeps per
	// connection, belong to one client beyond doubt.
	Isolation Isolation
	// Auth is whose sign-in the server's calls carry: shared (default)
	// or per-user (see ServerAuth).
	Auth ServerAuth
	// Line is where the server starts in the file.
	Line int
	// CommandLine is where its command: is in the file (0 when none).
	CommandLine int
	// Unresolved are the ${VAR} and ${secret:NAME} of the server's keys,
	// or of its group's, that are not set (each an *UnsetError): the
	// server is not started, and shows as unavailable with the fix (see
	// Unavailable), while the rest of the config serves. A reload that
	// finds them set starts it. A variable outside groups: (settings:,
	// http:, store: ...) is no server's: unset, it fails the config.
	Unresolved []*ConfigError
	// CLI writes the commands of the hints about the server (auth login,
	// pin accept), with -c when the config needs it.
	CLI CLI
}

// Unavailable is why the server cannot start, with what fixes it, while
// it has Unresolved references; nil otherwise.
func (s *Server) Unavailable() error {
	var reasons []string
	seen := map[string]bool{}
	for _, ce := range s.Unresolved {
		var u *UnsetError
		if !errors.As(ce, &u) || seen[u.Name] {
			continue
		}
		seen[u.Name] = true
		what := "environment variable "
		if u.Secret {
			what = "secret "
		}
		reasons = append(reasons, fmt.Sprintf("%s%s is not set (%s)", what, u.Name, u.Fix()))
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "; "))
}

// Startable reports whether the hub starts the server: it is not
// disabled, and every variable and secret it uses is set.
func (s *Server) Startable() bool { return !s.Disabled && len(s.Unresolved) == 0 }

// Isolation says whether client sessions share a server's connection.
type Isolation string

// The isolations of a server.
const (
	IsolationShared     Isolation = "shared"
	IsolationPerSession Isolation = "per-session"
)

// OAuth configures signing in to a protected remote server.
type OAuth struct {
	// ClientID of a pre-registered client; empty registers one dynamically.
	ClientID string
	// ClientSecret of a confidential pre-registered client.
	ClientSecret string
	// Scopes to ask for; default what the server says it needs.
	Scopes []string
	// RedirectPort is the loopback port of the redirect; default a free one.
	RedirectPort int
	// ClientMetadataURL is an https URL serving a client ID metadata
	// document for dynamic-mcp, used as the client ID where the server
	// supports those (instead of registering a client).
	ClientMetadataURL string
	// ExpectedIssuer is the issuer the authorization server's metadata may
	// name instead of the URL it was found at, for providers that do so
	// (Atlassian, Entra); accepted with a warning each time.
	ExpectedIssuer string
	// AuthMethod is how a pre-registered confidential client authenticates
	// at the token endpoint (client_secret_basic or client_secret_post),
	// as it was registered; default basic, unless the server lists only post.
	AuthMethod string
}

// set reports whether any OAuth setting is given.
func (o OAuth) set() bool {
	return o.ClientID != "" || o.ClientSecret != "" || len(o.Scopes) > 0 || o.RedirectPort != 0 || o.ClientMetadataURL != "" || o.ExpectedIssuer != "" || o.AuthMethod != ""
}

// LogValue keeps the client secret out of logs.
func (o OAuth) LogValue() slog.Value {
	secret := ""
	if o.ClientSecret != "" {
		secret = "REDACTED"
	}
	return slog.GroupValue(slog.String("client_id", o.ClientID), slog.String("client_secret", secret), slog.Any("scopes", o.Scopes))
}

// TokenDir is where OAuth sign-ins are kept: <state dir>/oauth-servers.
func (c *Config) TokenDir() string { return filepath.Join(c.StateDir, "oauth-servers") }

// Home is dynamic-mcp's directory: $DYNAMIC_MCP_HOME, or ~/.dynamic-mcp.
func Home() string {
	if h := os.Getenv("DYNAMIC_MCP_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".dynamic-mcp")
	}
	return ".dynamic-mcp"
}

// AuditPath is where the audit trail goes, "" when it is off.
func (c *Config) AuditPath() string {
	switch c.Audit.Path {
	case "off":
		return ""
	case "":
		return filepath.Join(c.StateDir, "audit.jsonl")
	}
	return c.Audit.Path
}

// nearFile is the file beside path whose name path most likely mistypes
// (config.yml for config.yaml), as nearest judges keys; "" for none.
func nearFile(path string) string {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(cmp.Or(dir, "."))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && e.Name() != base {
			names = append(names, e.Name())
		}
	}
	if n := nearest(base, names); n != "" {
		return dir + n
	}
	return ""
}

// MissingError is Load's error for a config that is not there, said
// with what may help (a near name, what a relative path is relative
// to); it wraps the open's error, so errors.Is(err, fs.ErrNotExist)
// tells it from a config that is there and not valid.
type MissingError struct {
	Near string // the file beside it whose name the path most likely mistypes; "" for none
	msg  string
	err  error
}

func (e *MissingError) Error() string { return e.msg }
func (e *MissingError) Unwrap() error { return e.err }

// Load is Loader.Load without secrets.
func Load(path string) (*Config, error) { return Loader{}.Load(path) }

// Load reads and parses the file at path; a leading ~/ is the home
// directory (a client does not expand it). A relative path that is not
// there is said to be relative to the working directory, which the
// client that started the hub chose.
func (l Loader) Load(path string) (*Config, error) {
	path = expandHome(path)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		// The directory is read for a near name only now: a config
		// that opens is loaded at every start and reload.
		if near := nearFile(path); near != "" {
			return nil, &MissingError{Near: near, err: err, msg: fmt.Sprintf("read config: open %s: no such file; did you mean %s?", path, near)}
		}
		if !filepath.IsAbs(path) {
			wd, _ := os.Getwd()
			return nil, &MissingError{err: err, msg: fmt.Sprintf("read config: open %s (relative to the working directory %s, which the client chose): no such file; give the config's absolute path in the client's entry", path, wd)}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	return l.Parse(path, f)
}

// ID names a server uniquely across the file: "group/server", or just the
// group when the server is inline.
func (s *Server) ID() string {
	if s.Name == s.Group {
		return s.Group
	}
	return s.Group + "/" + s.Name
}

// CallTimeoutFor is the timeout of one call to s.
func (c *Config) CallTimeoutFor(s *Server) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return c.Settings.CallTimeout
}
