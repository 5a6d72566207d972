package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// ConfigError is one problem in a config file, with where it is.
type ConfigError struct {
	Path string // file name, "" when parsed from a reader without one
	Line int    // 1-based; 0 when unknown
	Key  string // dotted path of the key, e.g. groups.web.servers.search.url
	Err  error
}

func (e *ConfigError) Error() string {
	loc := e.Path
	if loc == "" {
		loc = "config"
	}
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %v", loc, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", loc, e.Key, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// namePattern is what group and server names may hold: they become parts of
// tool names, which the MCP spec limits to [A-Za-z0-9_.-].
// Compiled at first use, not at every start.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })

// A Loader reads configs, taking the secrets ${secret:NAME} refer to from
// Secrets; the zero Loader (Parse, Load) has none, and reports a
// reference as a problem.
type Loader struct {
	Secrets Secrets
}

// Parse is Loader.Parse without secrets.
func Parse(path string, r io.Reader) (*Config, error) { return Loader{}.Parse(path, r) }

// Parse reads a config from r, substitutes ${VAR} and ${VAR:-default}
// (and ${secret:NAME} from l.Secrets), applies defaults and validates it.
// Every problem is reported, each as a *ConfigError, joined with
// go-multierror.
func (l Loader) Parse(path string, r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	p := &parser{Loader: l, path: path, dir: configDir(path), cli: CLIFor(path), nodes: map[*Server]map[string]*yaml.Node{}}
	used := map[string]bool{}
	p.env = func(name string) (string, bool) {
		for _, v := range varsRead(name) {
			used[v] = true
		}
		return configVar(p.dir, name)
	}
	p.stateDir = prescanStateDir(data, p.env)
	p.storeAt, p.storeBroken = prescanStore(data, p.env, func(name string) (string, bool) { return p.fileSecret(name, "store") })
	cfg := p.parse(data)
	if p.errs != nil {
		p.errs.ErrorFormat = listErrors
		return nil, p.errs
	}
	cfg.SecretUses = p.secretUses
	cfg.EnvUses = slices.Sorted(maps.Keys(used))
	cfg.setSecretValues(p.allSecrets(), p.secretUses)
	return cfg, nil
}

func listErrors(errs []error) string {
	s := fmt.Sprintf("%d problem(s) in config:", len(errs))
	for _, err := range errs {
		s += "\n  " + err.Error()
	}
	return s
}

type parser struct {
	Loader // the secrets
	path   string
	// sessionKeyTexts are http.session_keys as written (after ${VAR}):
	// hidden from stdio servers as the tokens are.
	sessionKeyTexts []string
	dir             string // the config file's directory, absolute; ${CONFIG_DIR}
	env             func(string) (string, bool)
	cli             CLI // the hints' commands
	// connectTimeoutSet says settings.connect_timeout is in the file: it
	// then bounds package runners' starts too.
	connectTimeoutSet bool
	errs              *multierror.Error
	// unresolved, while a group is read, collects the references to
	// variables and secrets that are not set: they make a server
	// unavailable (Server.Unresolved) instead of failing the config. nil
	// outside groups, where they are errors.
	unresolved *[]*ConfigError
	// stateDir, secrets and secretUses serve ${secret:NAME}: the vault's
	// directory, its secrets (read on the first reference) and where
	// each name is used.
	stateDir   string
	secrets    map[string]string
	secretsErr error
	secretUses map[string][]string
	// storeAt is store: (prescanned), whose secrets ${secret:NAME}
	// are, but for store:'s own (see storesecrets.go); storeBroken says
	// store: cannot be read.
	storeAt         string
	storeBroken     bool
	storeSecrets    map[string]string
	storeSecretsErr error
	// nodes are the value nodes of each server's keys: which keys it has,
	// and where each is, so that a problem is reported at its own line.
	nodes map[*Server]map[string]*yaml.Node
}

func (p *parser) fail(n *yaml.Node, key string, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = multierror.Append(p.errs, &ConfigError{Path: p.path, Line: line, Key: key, Err: fmt.Errorf(format, args...)})
}

func (p *parser) parse(data []byte) *Config {
	cfg := &Config{
		Path:          p.path,
		CLI:           p.cli,
		Mode:          ModeDynamic,
		PolicyDefault: ActionAllow,
		StateDir:      Home(),
		HTTP: HTTP{MaxSessions: DefaultMaxSessions, BodyTimeout: DefaultBodyTimeout, MaxInflight: DefaultMaxInflight,
			MaxBodyMemory: DefaultMaxBodyMemory, MaxAuthFailures: DefaultMaxAuthFailures, ClientShare: DefaultClientShare, DrainTimeout: DefaultDrainTimeout},
		Settings: Settings{
			ConnectTimeout:      DefaultConnectTimeout,
			ListTimeout:         DefaultListTimeout,
			CallTimeout:         DefaultCallTimeout,
			PageSize:            DefaultPageSize,
			MaxMessageSize:      DefaultMaxMessageSize,
			StopGrace:           DefaultStopGrace,
			StartupWait:         DefaultStartupWait,
			SessionInflight:     DefaultSessionInflight,
			MaxSessionProcesses: DefaultMaxSessionProcesses,
			SessionProcessIdle:  DefaultSessionProcessIdle,
			Search:              SearchAuto,
			Shared:              SharedAuto,
			ValidateArgs:        SwitchOn,
			Cooperative:         SwitchOff,
			SharedIdle:          DefaultSharedIdle,
			PromptTimeout:       DefaultPromptTimeout,
			Retry:               Retry{Attempts: DefaultRetryAttempts, InitialInterval: DefaultRetryInitial, ReconnectInterval: DefaultReconnectInterval},
		},
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, err := syntaxError(data, err)
		p.errs = multierror.Append(p.errs, &ConfigError{Path: p.path, Line: line, Err: err})
		return nil
	}
	if len(doc.Content) == 0 {
		p.fail(nil, "", "file is empty: it needs at least one group under groups:")
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.fail(root, "", "the file must be a map with groups: (and optionally mode: and settings:)")
		return nil
	}
	misspelt := p.mapping(root, "", map[string]func(key string, v *yaml.Node){
		"mode":     func(key string, v *yaml.Node) { choose(p, v, key, &cfg.Mode, ModeDynamic, ModeFlat, ModeAuto) },
		"settings": func(key string, v *yaml.Node) { p.settings(v, key, &cfg.Settings) },
		"groups":   func(key string, v *yaml.Node) { cfg.Groups = p.groups(v, key) },
		"profiles": func(key string, v *yaml.Node) { cfg.Profiles = p.profiles(v, key) },
		"clients":  func(key string, v *yaml.Node) { cfg.Clients = p.clients(v, key) },
		"policy":   func(key string, v *yaml.Node) { cfg.Policy = p.rules(v, key, "policy") },
		"policy_default": func(key string, v *yaml.Node) {
			choose(p, v, key, &cfg.PolicyDefault, ActionAllow, ActionDeny)
		},
		"audit": func(key string, v *yaml.Node) {
			p.mapping(v, key, map[string]func(string, *yaml.Node){
				"path":      func(k string, v *yaml.Node) { cfg.Audit.Path = expandHome(p.str(v, k)) },
				"arguments": func(k string, v *yaml.Node) { cfg.Audit.Arguments = p.bool(v, k) },
				"required":  func(k string, v *yaml.Node) { cfg.Audit.Required = p.bool(v, k) },
			})
			if cfg.Audit.Required && cfg.Audit.Path == "off" {
				p.fail(findKey(v, "required"), key+".required", `needs an audit trail, but path is "off"`)
			}
		},
		"state_dir": func(key string, v *yaml.Node) { cfg.StateDir = expandHome(p.str(v, key)) },
		"store":     func(key string, v *yaml.Node) { cfg.Store = p.storeURL(v, key) },
		"http": func(key string, v *yaml.Node) {
			p.mapping(v, key, map[string]func(string, *yaml.Node){
				"token":             func(k string, v *yaml.Node) { cfg.HTTP.Token = p.str(v, k) },
				"tokens":            func(k string, v *yaml.Node) { cfg.HTTP.Tokens = p.tokens(v, k) },
				"allowed_origins":   func(k string, v *yaml.Node) { cfg.HTTP.AllowedOrigins = p.strings(v, k) },
				"max_sessions":      func(k string, v *yaml.Node) { p.positive(v, k, &cfg.HTTP.MaxSessions) },
				"body_timeout":      func(k string, v *yaml.Node) { cfg.HTTP.BodyTimeout = p.duration(v, k) },
				"max_inflight":      func(k string, v *yaml.Node) { p.positive(v, k, &cfg.HTTP.MaxInflight) },
				"client_share":      func(k string, v *yaml.Node) { p.share(v, k, &cfg.HTTP.ClientShare) },
				"max_body_memory":   func(k string, v *yaml.Node) { cfg.HTTP.MaxBodyMemory = p.size(v, k) },
				"max_auth_failures": func(k string, v *yaml.Node) { p.positive(v, k, &cfg.HTTP.MaxAuthFailures) },
				"auth":              func(k string, v *yaml.Node) { cfg.HTTP.Auth = p.httpAuth(v, k) },
				"session_keys":      func(k string, v *yaml.Node) { cfg.HTTP.SessionKeys = p.sessionKeys(v, k) },
				"drain_timeout":     func(k string, v *yaml.Node) { cfg.HTTP.DrainTimeout = p.duration(v, k) },
				"trusted_proxies":   func(k string, v *yaml.Node) { cfg.HTTP.TrustedProxies = p.trustedProxies(v, k) },
			})
			p.checkTokens(v, key, cfg.HTTP)
		},
	})
	if len(cfg.Groups) == 0 && findKey(root, "groups") == nil && !misspelt["groups"] {
		p.fail(root, "groups", "is required: list at least one group")
	}
	p.checkProfiles(cfg)
	if h := findKey(root, "http"); h != nil && cfg.HTTP.Auth != nil {
		p.checkHTTPAuth(cfg, findKey(h, "auth"))
	}
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			s.Retry = s.Retry.orDefaults(cfg.Settings.Retry)
			if s.PackageRunner() != "" && !p.connectTimeoutSet {
				s.ConnectTimeout = s.runnerConnectTimeout()
			}
			if s.Transport == TransportStdio {
				for _, t := range cfg.HTTP.Credentials() {
					s.Hide = append(s.Hide, t)
				}
				s.Hide = append(s.Hide, p.sessionKeyTexts...)
				slices.Sort(s.Hide)
			}
		}
	}
	return cfg
}

// configDir is the directory of the config file at path, absolute: where
// a stdio server runs unless its cwd: says otherwise. It is the working
// directory for a config read without a file name.
func configDir(path string) string {
	if path == "" {
		dir, _ := os.Getwd()
		return dir
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	return filepath.Dir(abs)
}

// resolve makes a path from the config absolute: ~/ is the home directory
// and a relative path is relative to the config file's directory.
func (p *parser) resolve(path string) string {
	path = expandHome(path)
	if path == "" || filepath.IsAbs(path) || p.dir == "" {
		return path
	}
	return filepath.Join(p.dir, path)
}

func (p *parser) settings(n *yaml.Node, path string, s *Settings) {
	p.mapping(n, path, map[string]func(string, *yaml.Node){
		"connect_timeout": func(k string, v *yaml.Node) {
			s.ConnectTimeout = p.duration(v, k)
			p.connectTimeoutSet = true
		},
		"list_timeout":          func(k string, v *yaml.Node) { s.ListTimeout = p.duration(v, k) },
		"call_timeout":          func(k string, v *yaml.Node) { s.CallTimeout = p.duration(v, k) },
		"stop_grace":            func(k string, v *yaml.Node) { s.StopGrace = p.duration(v, k) },
		"startup_wait":          func(k string, v *yaml.Node) { s.StartupWait = p.duration(v, k) },
		"max_message_size":      func(k string, v *yaml.Node) { s.MaxMessageSize = p.size(v, k) },
		"retry":                 func(k string, v *yaml.Node) { p.retry(v, k, &s.Retry) },
		"session_inflight":      func(k string, v *yaml.Node) { p.positive(v, k, &s.SessionInflight) },
		"max_session_processes": func(k string, v *yaml.Node) { p.positive(v, k, &s.MaxSessionProcesses) },
		"session_process_idle": func(k string, v *yaml.Node) {
			if d := p.duration(v, k); d > 0 {
				s.SessionProcessIdle = d
			}
		},
		"search":      func(k string, v *yaml.Node) { choose(p, v, k, &s.Search, SearchAuto, SearchOn, SearchOff) },
		"shared":      func(k string, v *yaml.Node) { choose(p, v, k, &s.Shared, SharedAuto, SharedOff) },
		"shared_idle": func(k string, v *yaml.Node) { s.SharedIdle = p.duration(v, k) },
		"max_tools":   func(k string, v *yaml.Node) { p.positive(v, k, &s.MaxTools) },
		"prompt_timeout": func(k string, v *yaml.Node) {
			if d := p.duration(v, k); d > 0 {
				s.PromptTimeout = d
			}
		},
		"notify":        func(k string, v *yaml.Node) { s.Notify = p.bool(v, k) },
		"validate_args": func(k string, v *yaml.Node) { choose(p, v, k, &s.ValidateArgs, SwitchOn, SwitchOff) },
		"cooperative":   func(k string, v *yaml.Node) { choose(p, v, k, &s.Cooperative, SwitchOn, SwitchOff) },
		"max_result":    func(k string, v *yaml.Node) { s.MaxResult = p.maxResult(v, k, false) },
		"page_size": func(k string, v *yaml.Node) {
			if n, ok := p.int(v, k); n > 0 {
				s.PageSize = n
			} else if ok {
				p.fail(v, k, "must be a positive number")
			}
		},
	})
}

func (p *parser) groups(n *yaml.Node, path string) []*Group {
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "must be a map of group name to group")
		return nil
	}
	if len(n.Content) == 0 {
		p.fail(n, path, "is empty: list at least one group")
	}
	var groups []*Group
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, v := n.Content[i].Value, n.Content[i+1]
		key := path + "." + name
		if seen[name] {
			p.fail(n.Content[i], key, "appears twice: group names are unique")
			continue
		}
		seen[name] = true
		if !namePattern().MatchString(name) {
			p.fail(n.Content[i], key, "group name must be 1-64 characters of A-Z a-z 0-9 _ . -")
		}
		groups = append(groups, p.group(name, n.Content[i], v, key))
	}
	return groups
}

// group reads one group: its own keys, and either one server inline (a
// server's keys beside the group's) or a servers: map.
func (p *parser) group(name string, at, n *yaml.Node, path string) *Group {
	g := &Group{Name: name, Prefix: true, Instructions: true, Line: at.Line, PinOnChange: PinBlock}
	inline := &Server{Name: name, Group: name, Line: at.Line, Isolation: IsolationShared, CLI: p.cli}
	// What a group's own keys (and an inline server's) leave unresolved
	// holds up each of its servers; what a server's keys do, that server.
	var unresolved []*ConfigError
	p.unresolved = &unresolved
	defer func() {
		p.unresolved = nil
		for _, s := range g.Servers {
			s.Unresolved = append(s.Unresolved, unresolved...)
			slices.SortStableFunc(s.Unresolved, func(a, b *ConfigError) int { return a.Line - b.Line })
		}
	}()
	hasInline, hasServers, badDescription := false, false, false
	fields := map[string]func(string, *yaml.Node){
		"description": func(k string, v *yaml.Node) {
			var ok bool
			g.Description, ok = p.strOK(v, k)
			badDescription = !ok
		},
		"prefix":        func(k string, v *yaml.Node) { g.Prefix = p.bool(v, k) },
		"instructions":  func(k string, v *yaml.Node) { g.Instructions = p.bool(v, k) },
		"deny":          func(k string, v *yaml.Node) { g.Tools.Deny = p.patterns(v, k) },
		"allow":         func(k string, v *yaml.Node) { g.Tools.Allow = p.patterns(v, k) },
		"prompts":       func(k string, v *yaml.Node) { g.Prompts = p.filter(v, k) },
		"resources":     func(k string, v *yaml.Node) { g.Resources = p.filter(v, k) },
		"policy":        func(k string, v *yaml.Node) { g.Policy = p.rules(v, k, name+".policy") },
		"pin_on_change": func(k string, v *yaml.Node) { choose(p, v, k, &g.PinOnChange, PinBlock, PinWarn) },
		"expose":        func(k string, v *yaml.Node) { g.Expose = p.strings(v, k) },
		"validate_args": func(k string, v *yaml.Node) { choose(p, v, k, &g.ValidateArgs, SwitchOn, SwitchOff) },
		"servers": func(k string, v *yaml.Node) {
			hasServers = true
			if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
				p.fail(v, k, "must be a map of server name to server, with at least one server")
				return
			}
			seen := map[string]bool{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				sname := v.Content[i].Value
				skey := k + "." + sname
				if seen[sname] {
					p.fail(v.Content[i], skey, "appears twice: server names are unique in a group")
					continue
				}
				seen[sname] = true
				if !namePattern().MatchString(sname) {
					p.fail(v.Content[i], skey, "server name must be 1-64 characters of A-Z a-z 0-9 _ . -")
				}
				s := &Server{Name: sname, Group: name, Line: v.Content[i].Line, Isolation: IsolationShared, CLI: p.cli}
				if v.Content[i+1].Kind != yaml.MappingNode {
					p.fail(v.Content[i+1], skey, "must be a map with command: or url:")
				} else {
					p.unresolved = &s.Unresolved
					misspelt := p.mapping(v.Content[i+1], skey, p.serverFields(s))
					p.unresolved = &unresolved
					p.checkServer(v.Content[i], skey, s, misspelt)
				}
				g.Servers = append(g.Servers, s)
			}
		},
	}
	for k, f := range p.serverFields(inline) {
		f := f
		fields[k] = func(key string, v *yaml.Node) { hasInline = true; f(key, v) }
	}
	if n.Kind != yaml.MappingNode {
		p.fail(at, path, "must be a map with description and a server (command: or url:) or servers:")
		return g
	}
	misspelt := p.mapping(n, path, fields)
	if g.Description == "" && !badDescription && !misspelt["description"] {
		p.fail(at, path+".description", "is required: say what the group is for, the LLM reads it")
	}
	for i, r := range g.Policy {
		if r.Server != "" && !hasServerNamed(g, inline, r.Server) {
			where := at
			if policy := findKey(n, "policy"); policy != nil && i < len(policy.Content) {
				where = cmp.Or(findKey(policy.Content[i], "server"), where)
			}
			p.fail(where, fmt.Sprintf("%s.policy[%d].server", path, i), "names %q, which is not a server of this group", r.Server)
		}
	}
	switch {
	case hasInline && hasServers:
		p.fail(at, path, "has both an inline server and servers:; use one or the other")
	case hasInline:
		p.checkServer(at, path, inline, misspelt)
		g.Servers = []*Server{inline}
	case !hasServers && !misspelt["command"] && !misspelt["url"] && !misspelt["servers"]:
		p.fail(at, path, "has no server: give command: or url:, or a servers: map")
	}
	return g
}

func hasServerNamed(g *Group, inline *Server, name string) bool {
	if inline.Name == name && (inline.Command != "" || inline.URL != "") {
		return true
	}
	for _, s := range g.Servers {
		if s.Name == name {
			return true
		}
	}
	return false
}

// serverFields reads a server's keys into s, and records where each is.
func (p *parser) serverFields(s *Server) map[string]func(string, *yaml.Node) {
	fields := map[string]func(string, *yaml.Node){
		"command": func(k string, v *yaml.Node) {
			if c, ok := p.strOK(v, k); ok && c == "" {
				p.fail(v, k, "is empty: give the program to run")
			} else {
				s.Command, s.CommandLine = c, v.Line
			}
		},
		"args": func(k string, v *yaml.Node) { s.Args = p.strings(v, k) },
		"env":  func(k string, v *yaml.Node) { s.Env = p.stringMap(v, k) },
		"cwd":  func(k string, v *yaml.Node) { s.Cwd = p.resolve(p.str(v, k)) },
		"url": func(k string, v *yaml.Node) {
			var ok bool
			if s.URL, ok = p.strOK(v, k); !ok {
				return
			}
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.fail(v, k, "must be an http:// or https:// URL, not %q", s.URL)
			}
		},
		"headers": func(k string, v *yaml.Node) { s.Headers = p.stringMap(v, k) },
		"transport": func(k string, v *yaml.Node) {
			t, ok := p.strOK(v, k)
			switch Transport(t) {
			case TransportStdio, TransportStreamableHTTP, TransportSSE:
				s.Transport = Transport(t)
			case "http", "streamableHttp":
				s.Transport = TransportStreamableHTTP
			default:
				if ok {
					p.fail(v, k, "must be stdio, streamable-http or sse, not %q", t)
				}
			}
		},
		"timeout": func(k string, v *yaml.Node) { s.Timeout = p.duration(v, k) },
		"retry":   func(k string, v *yaml.Node) { p.retry(v, k, &s.Retry) },
		"oauth": func(k string, v *yaml.Node) {
			p.mapping(v, k, map[string]func(string, *yaml.Node){
				"client_id":     func(k string, v *yaml.Node) { s.OAuth.ClientID = p.str(v, k) },
				"client_secret": func(k string, v *yaml.Node) { s.OAuth.ClientSecret = p.str(v, k) },
				"scopes":        func(k string, v *yaml.Node) { s.OAuth.Scopes = p.strings(v, k) },
				"redirect_port": func(k string, v *yaml.Node) { s.OAuth.RedirectPort, _ = p.int(v, k) },
				"token_endpoint_auth_method": func(k string, v *yaml.Node) {
					choose(p, v, k, &s.OAuth.AuthMethod, "client_secret_basic", "client_secret_post")
				},
				"expected_issuer": func(k string, v *yaml.Node) {
					var ok bool
					if s.OAuth.ExpectedIssuer, ok = p.strOK(v, k); ok && !strings.HasPrefix(s.OAuth.ExpectedIssuer, "https://") && !strings.HasPrefix(s.OAuth.ExpectedIssuer, "http://") {
						p.fail(v, k, "must be the issuer's URL")
					}
				},
				"client_metadata_url": func(k string, v *yaml.Node) {
					var ok bool
					if s.OAuth.ClientMetadataURL, ok = p.strOK(v, k); ok && !strings.HasPrefix(s.OAuth.ClientMetadataURL, "https://") {
						p.fail(v, k, "must be an https:// URL")
					}
				},
			})
		},
		"disabled":  func(k string, v *yaml.Node) { s.Disabled = p.bool(v, k) },
		"isolation": func(k string, v *yaml.Node) { choose(p, v, k, &s.Isolation, IsolationShared, IsolationPerSession) },
		"auth":      func(k string, v *yaml.Node) { choose(p, v, k, &s.Auth, AuthShared, AuthPerUser) },
	}
	p.nodes[s] = map[string]*yaml.Node{}
	for k, f := range fields {
		fields[k] = func(key string, v *yaml.Node) {
			p.nodes[s][k] = v
			f(key, v)
		}
	}
	return fields
}

func (p *parser) retry(n *yaml.Node, path string, r *Retry) {
	p.mapping(n, path, map[string]func(string, *yaml.Node){
		"attempts": func(k string, v *yaml.Node) {
			var ok bool
			if r.Attempts, ok = p.int(v, k); ok && r.Attempts < 1 {
				p.fail(v, k, "must be at least 1")
			}
		},
		"initial_interval":   func(k string, v *yaml.Node) { r.InitialInterval = p.duration(v, k) },
		"reconnect_interval": func(k string, v *yaml.Node) { r.ReconnectInterval = p.duration(v, k) },
	})
}

// patterns compiles a list of RE2 patterns; a bad one is reported with its
// index and text.
func (p *parser) patterns(n *yaml.Node, key string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for i, s := range p.strings(n, key) {
		re, err := regexp.Compile(s)
		if err != nil {
			hint := ""
			if strings.ContainsAny(s, "*?") {
				// policy: takes globs, deny: and allow: take RE2: a glob
				// written here is the likeliest mistake.
				hint = fmt.Sprintf(" (%s takes RE2 regular expressions, not globs as policy: does: for the glob %q write %q)", key[strings.LastIndex(key, ".")+1:], s, globToRE2(s))
			}
			p.fail(n.Content[i], fmt.Sprintf("%s[%d]", key, i), "invalid pattern %q: %v%s", s, err, hint)
			continue
		}
		out = append(out, re)
	}
	return out
}

// globToRE2 is the anchored RE2 of a glob of * and ?, for a hint.
func globToRE2(glob string) string {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return b.String()
}

func (p *parser) filter(n *yaml.Node, key string) Filter {
	var f Filter
	p.mapping(n, key, map[string]func(string, *yaml.Node){
		"deny":  func(k string, v *yaml.Node) { f.Deny = p.patterns(v, k) },
		"allow": func(k string, v *yaml.Node) { f.Allow = p.patterns(v, k) },
	})
	return f
}

// rules reads a policy: a list of rules, named prefix[i] unless named.
func (p *parser) rules(n *yaml.Node, key, prefix string) []Rule {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, key, "must be a list of rules")
		return nil
	}
	var rules []Rule
	for i, rn := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		r := Rule{Name: fmt.Sprintf("%s[%d]", prefix, i), Line: rn.Line}
		var rate rateNodes // read once the action is known (see rateLimit)
		misspelt := p.mapping(rn, k, map[string]func(string, *yaml.Node){
			"name": func(k string, v *yaml.Node) { r.Name = p.str(v, k) },
			"action": func(k string, v *yaml.Node) {
				choose(p, v, k, &r.Action, ActionAllow, ActionDeny, ActionLog, ActionPrompt)
			},
			"tool":        func(k string, v *yaml.Node) { r.Tool = p.str(v, k) },
			"args":        func(k string, v *yaml.Node) { r.Args = p.stringMap(v, k) },
			"server":      func(k string, v *yaml.Node) { r.Server = p.str(v, k) },
			"uri":         func(k string, v *yaml.Node) { r.URI = p.str(v, k) },
			"prompt":      func(k string, v *yaml.Node) { r.Prompt = p.str(v, k) },
			"description": func(k string, v *yaml.Node) { r.Description = p.str(v, k) },
			"rate":        func(_ string, v *yaml.Node) { rate.rate = v },
			"per":         func(_ string, v *yaml.Node) { rate.per = v },
			"then":        func(_ string, v *yaml.Node) { rate.then = v },
		})
		r.Rate = p.rateLimit(rate, k, r)
		if rn.Kind == yaml.MappingNode && findKey(rn, "action") == nil && !misspelt["action"] {
			p.fail(rn, k+".action", "is required: allow, deny, log or prompt")
		}
		if len(r.Args) > 0 && findKey(rn, "tool") == nil && !misspelt["tool"] {
			p.fail(rn, k+".args", "only applies to tool calls: give tool: too (\"*\" for any)")
		}
		p.checkGlobs(rn, k, r)
		rules = append(rules, r)
	}
	p.checkRateNames(n, key, rules)
	return rules
}

// checkGlobs reports the globs of rule r (read from n, at key) that
// doublestar cannot match with: an unclosed [ or {, a trailing \.
func (p *parser) checkGlobs(n *yaml.Node, key string, r Rule) {
	bad := func(k, pattern string) {
		if !doublestar.ValidatePattern(pattern) {
			p.fail(n, key+"."+k, "%q is not a valid glob (an unclosed [ or {, or a trailing \\?)", pattern)
		}
	}
	bad("tool", r.Tool)
	bad("uri", r.URI)
	bad("prompt", r.Prompt)
	for _, a := range slices.Sorted(maps.Keys(r.Args)) {
		bad("args."+a, r.Args[a])
	}
}

// checkServer validates one server after its fields are read, and
// resolves its paths against the config file's directory. n is where the
// server starts; misspelt are the keys that unknown keys were taken to
// mean, already reported.
func (p *parser) checkServer(n *yaml.Node, path string, s *Server, misspelt map[string]bool) {
	keys := p.nodes[s]
	at := func(key string) *yaml.Node { return cmp.Or(keys[key], n) }
	hasCommand, hasURL := keys["command"] != nil, keys["url"] != nil
	switch {
	case hasCommand && hasURL:
		p.fail(n, path, "has both command: and url:; a server is either a process or a remote URL")
	case !hasCommand && !hasURL:
		if !misspelt["command"] && !misspelt["url"] {
			p.fail(n, path, "needs command: (a process) or url: (a remote server)")
		}
	case hasCommand:
		if s.OAuth.set() {
			p.fail(at("oauth"), path+".oauth", "only applies to url: servers")
		}
		if s.PerUser() {
			p.fail(at("auth"), path+".auth", "per-user only applies to url: servers (a sign-in is for a remote server)")
		}
		if len(s.Headers) > 0 {
			p.fail(at("headers"), path+".headers", "only applies to url: servers")
		}
		if s.Transport != "" && s.Transport != TransportStdio {
			p.fail(at("transport"), path+".transport", "is %s but the server has command:, which is stdio", s.Transport)
		}
		s.Transport = TransportStdio
		s.Command = p.resolveCommand(s.Command)
		if keys["cwd"] == nil {
			s.Cwd = p.dir
		}
	default:
		if s.Transport == TransportStdio {
			p.fail(at("transport"), path+".transport", "is stdio but the server has url:")
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"args", len(s.Args) > 0}, {"env", len(s.Env) > 0}, {"cwd", s.Cwd != ""}} {
			if k.set {
				p.fail(at(k.key), path+"."+k.key, "only applies to command: servers")
			}
		}
		if s.OAuth.ClientSecret != "" && s.OAuth.ClientID == "" {
			p.fail(at("oauth"), path+".oauth.client_secret", "needs oauth.client_id")
		}
	}
}

// resolveCommand makes a relative command with a slash in it (./server.sh,
// bin/server) absolute against the config file's directory, wherever cwd:
// points. A bare name (node, npx) is left to the PATH lookup.
func (p *parser) resolveCommand(command string) string {
	command = expandHome(command)
	if strings.ContainsRune(command, '/') || strings.ContainsRune(command, filepath.Separator) {
		return p.resolve(command)
	}
	return command
}

// mapping walks a YAML mapping, calling the handler of each known key and
// reporting every unknown or repeated one. An unknown key that is close to
// a known one is reported with it ("did you mean"), and returned among
// misspelt, so that the caller does not report the known key as missing
// too: one mistake, one message.
func (p *parser) mapping(n *yaml.Node, path string, fields map[string]func(key string, v *yaml.Node)) (misspelt map[string]bool) {
	misspelt = map[string]bool{}
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return misspelt
		}
		p.fail(n, path, "must be a map")
		return misspelt
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if path != "" {
			key = path + "." + k.Value
		}
		if seen[k.Value] {
			p.fail(k, key, "appears twice")
			continue
		}
		seen[k.Value] = true
		f, ok := fields[k.Value]
		if !ok {
			if near := nearest(k.Value, slices.Collect(maps.Keys(fields))); near != "" {
				p.fail(k, key, "unknown key; did you mean %q?", near)
				misspelt[near] = true
			} else {
				p.fail(k, key, "unknown key")
			}
			continue
		}
		f(key, v)
	}
	return misspelt
}

func findKey(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func (p *parser) str(n *yaml.Node, key string) string {
	s, _ := p.strOK(n, key)
	return s
}

// strOK reads a string with ${VAR} substituted; ok is false when it
// reported that n is not one, or names a variable that is not set, so
// that a caller checking the value further does not report it again.
func (p *parser) strOK(n *yaml.Node, key string) (s string, ok bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, key, "must be a string")
		return "", false
	}
	s, err := expand(n.Value, func(name string) (string, bool) {
		if secret, ok := strings.CutPrefix(name, secretPrefix); ok {
			return p.secret(secret, key)
		}
		return p.env(name)
	})
	var unset *UnsetError
	if errors.As(err, &unset) {
		unset.CLI = p.cli
		if p.unresolved != nil {
			*p.unresolved = append(*p.unresolved, &ConfigError{Path: p.path, Line: n.Line, Key: key, Err: err})
			return "", false
		}
	}
	if err != nil {
		p.fail(n, key, "%v", err)
		return "", false
	}
	return s, true
}

// choose sets *dst to the value of n if it is one of choices, and
// otherwise records an error that names them.
func choose[T ~string](p *parser, n *yaml.Node, key string, dst *T, choices ...T) {
	s, ok := p.strOK(n, key)
	if !ok {
		return
	}
	v := T(s)
	if slices.Contains(choices, v) {
		*dst = v
		return
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	last := len(names) - 1
	p.fail(n, key, "must be %s or %s, not %q", strings.Join(names[:last], ", "), names[last], v)
}

func (p *parser) strings(n *yaml.Node, key string) []string {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, key, "must be a list of strings")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, v := range n.Content {
		out = append(out, p.str(v, fmt.Sprintf("%s[%d]", key, i)))
	}
	return out
}

func (p *parser) stringMap(n *yaml.Node, key string) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.fail(n, key, "must be a map of strings")
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = p.str(n.Content[i+1], key+"."+n.Content[i].Value)
	}
	return out
}

func (p *parser) bool(n *yaml.Node, key string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.fail(n, key, "must be true or false")
	}
	return b
}

// int reads a whole number; ok is false when it reported that n is not one.
func (p *parser) int(n *yaml.Node, key string) (i int, ok bool) {
	if n.Kind != yaml.ScalarNode || n.Decode(&i) != nil {
		p.fail(n, key, "must be a whole number")
		return 0, false
	}
	return i, true
}

// positive reads a whole number above zero into *i.
func (p *parser) positive(n *yaml.Node, key string, i *int) {
	if v, ok := p.int(n, key); ok {
		if v <= 0 {
			p.fail(n, key, "must be above zero, not %d", v)
			return
		}
		*i = v
	}
}

func (p *parser) duration(n *yaml.Node, key string) time.Duration {
	s, ok := p.strOK(n, key)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.fail(n, key, "must be a positive duration such as 30s or 2m, not %q", s)
		return 0
	}
	return d
}

// size reads a byte count: a number, or a number with KiB or MiB.
func (p *parser) size(n *yaml.Node, key string) int {
	s, ok := p.strOK(n, key)
	if !ok {
		return DefaultMaxMessageSize
	}
	s = strings.TrimSpace(s)
	mult := 1
	for suffix, m := range map[string]int{"KiB": 1 << 10, "MiB": 1 << 20} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, suffix)), m
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 || v > (1<<30)/mult {
		p.fail(n, key, "must be a size such as 10MiB, 512KiB or 1048576 (at most 1024MiB)")
		return DefaultMaxMessageSize
	}
	return v * mult
}
