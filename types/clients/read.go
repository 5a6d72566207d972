package clients

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Read reads the servers of a client's config, in the file's order, with
// notes for the user: variables rewritten. A secret written literally is
// left for the caller to note (LiteralSecret), once, with what it offers
// to do about it.
//
// A config over MaxFileSize or nested deeper than MaxDepth is refused
// before it is parsed.
func (c *Client) Read(data []byte) ([]Server, []string, error) {
	if err := checkLimits(data, c.isTOML()); err != nil {
		return nil, nil, err
	}
	servers, notes, err := c.format.read(data)
	if err != nil {
		return nil, nil, err
	}
	if c.isTOML() {
		return servers, notes, nil // Codex's values are literal (literalCodex)
	}
	for i := range servers {
		notes = append(notes, normalize(&servers[i])...)
	}
	return servers, notes, nil
}

// ReadAt reads the servers at a JSON path of a file, for configs that keep
// servers in several places (Claude Code's per-project entries).
// The same limits as Read apply.
func ReadAt(data []byte, path ...string) ([]Server, []string, error) {
	c := &Client{format: jsonFormat{path: path, entry: plainEntry}}
	return c.Read(data)
}

// Install rewrites data so that the client's server list holds only e. It
// returns the new file and the server list as it was, for Restore.
func (c *Client) Install(data []byte, e Entry) ([]byte, []byte, error) {
	if err := checkLimits(data, c.isTOML()); err != nil {
		return nil, nil, err
	}
	return c.format.install(data, e)
}

// Restore puts back the server list Install replaced (orig) and keeps
// every server data holds now other than the one named entry: servers
// the user added since install stay. A server in both takes its current
// definition. The result is orig's servers in their order, then the
// added ones in theirs.
func (c *Client) Restore(data, orig []byte, entry string) ([]byte, error) {
	if err := checkLimits(data, c.isTOML()); err != nil {
		return nil, err
	}
	return c.format.restore(data, orig, entry)
}

func (c *Client) isTOML() bool {
	_, ok := c.format.(tomlFormat)
	return ok
}

// The patterns are compiled at first use, not at every start.
var (
	envRef   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`) })
	inputRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{input:([^}]+)\}`) })
	bareRef  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)$`) })
	// VS Code's (and Cursor's) workspace folder, of a multi-root workspace's
	// folder too: ${workspaceFolder:name}.
	workspaceRef = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\$\{workspaceFolder(Basename)?(:[^}]*)?\}`)
	})
	secretKey = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(token|secret|password|passwd|api[_-]?key|apikey|credential|private[_-]?key|^authorization$|^key$)`)
	})
)

// normalize rewrites a client's variable references as the hub's
// ${VAR}, and writes every other $ as the hub's literal $$ (so that
// pa$$word reaches the server as pa$$word).
func normalize(s *Server) []string {
	var notes []string
	noted := map[string]bool{}
	fix := func(v string) string {
		// VS Code's predefined variables: ${userHome} is the hub's $HOME;
		// the hub has no workspace, so a workspace folder becomes a
		// variable (the group waits for it) and a note to write the path.
		v = strings.ReplaceAll(v, "${userHome}", "${HOME}")
		v = workspaceRef().ReplaceAllStringFunc(v, func(ref string) string {
			name := "WORKSPACE_FOLDER"
			if strings.HasPrefix(ref, "${workspaceFolderBasename") {
				name += "_BASENAME"
			}
			if !noted[ref] {
				noted[ref] = true
				notes = append(notes, fmt.Sprintf("server %s: %s is VS Code's workspace folder: the hub has no workspace; write the path in place of ${%s}", s.Name, ref, name))
			}
			return "${" + name + "}"
		})
		v = envRef().ReplaceAllString(v, "$${$1}")
		return inputRef().ReplaceAllStringFunc(v, func(m string) string {
			id := inputRef().FindStringSubmatch(m)[1]
			name := envName(id)
			notes = append(notes, fmt.Sprintf("server %s: input %q becomes ${%s}", s.Name, id, name))
			return "${" + name + "}"
		})
	}
	s.Command = config.Escape(fix(s.Command))
	s.URL = config.Escape(fix(s.URL))
	s.Cwd = config.Escape(fix(s.Cwd))
	for i := range s.Args {
		s.Args[i] = config.Escape(fix(s.Args[i]))
	}
	// env, then headers, in key order: the notes come out in the same
	// order every run.
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for _, k := range sortedKeys(m) {
			m[k] = config.Escape(bareRef().ReplaceAllString(fix(m[k]), "$${$1}")) // Gemini's $VAR
		}
	}
	return notes
}

// SecretName reports whether an env variable's or header's name says its
// value is a secret (what import notes, and offers to move to the vault).
func SecretName(name string) bool { return secretKey().MatchString(name) }

// envName makes an environment variable name of an id: _ first when
// the id starts with a digit (1password-token), since a name that does
// is none in the config.
func envName(id string) string {
	var b strings.Builder
	if id != "" && id[0] >= '0' && id[0] <= '9' {
		b.WriteByte('_')
	}
	for _, r := range strings.ToUpper(id) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
