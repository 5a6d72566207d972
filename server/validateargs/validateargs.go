// Package validateargs is the argument check stage of the call chain: a
// tools/call's arguments are validated against the tool's inputSchema
// before the call goes upstream, and a call that does not fit is answered
// with an isError result naming each violated path and carrying the
// schema, so that the model corrects itself in one turn (as mcpproxy-go
// and ContextForge do). It is the stage between routing and policy.
package validateargs

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema/kind"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

const (
	// maxSchemaInError bounds the bytes of the tool's inputSchema an
	// invalid-arguments answer carries.
	maxSchemaInError = 4 << 10
	// maxArgProblems bounds the violations an answer lists.
	maxArgProblems = 20
	// maxArgSchemas bounds the compiled schemas kept; past it the cache
	// starts again (a list change leaves old definitions behind).
	maxArgSchemas = 1024
	// schemaURL is where a tool's inputSchema is placed for the compiler:
	// a URL nothing can fetch, so that only its own local $refs resolve.
	schemaURL = "urn:dynamic-mcp:inputSchema"
)

// Schemas are the tools' input schemas compiled on first use, by the
// hash of the schema's bytes: a definition that did not change across a
// list change is not compiled again, one that changed is compiled anew.
// Nothing is compiled at start-up. The zero Schemas is empty; the hub
// keeps one across reloads.
type Schemas struct {
	mu     sync.Mutex // guards byHash
	byHash map[[sha256.Size]byte]*argSchema
}

// argSchema is one compiled inputSchema; schema is nil when it could not
// be compiled, and calls pass unchecked. quick is its quick check (see
// quickNode), nil when it uses a keyword that check does not decide.
type argSchema struct {
	once   sync.Once
	schema *jsonschema.Schema
	quick  *quickNode
}

// get is the compiled schema of raw, compiled on first use (logged once
// when it cannot be, with the tool that has it).
func (a *Schemas) get(raw json.RawMessage, tool string, server *config.Server, logger *slog.Logger) *argSchema {
	key := sha256.Sum256(raw)
	a.mu.Lock()
	if a.byHash == nil || len(a.byHash) >= maxArgSchemas {
		a.byHash = map[[sha256.Size]byte]*argSchema{}
	}
	e := a.byHash[key]
	if e == nil {
		e = &argSchema{}
		a.byHash[key] = e
	}
	a.mu.Unlock()
	e.once.Do(func() {
		start := time.Now()
		s, err := compileArgSchema(raw)
		if err != nil {
			logger.Warn("tool's inputSchema cannot be compiled: its calls' arguments pass unchecked",
				"tool", tool, "server", server.ID(), "err", err)
			return
		}
		e.schema, e.quick = s, quickOf(s)
		logger.Debug("compiled a tool's inputSchema", "tool", tool, "server", server.ID(), "took", time.Since(start), "quick", e.quick != nil)
	})
	return e
}

// errRemoteRef refuses every schema the compiler would load: a tool's
// schema is checked with what it holds, never with what a $ref fetches.
var errRemoteRef = errors.New("remote $ref not fetched")

type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, fmt.Errorf("%s: %w", url, errRemoteRef) }

// compileArgSchema compiles an inputSchema: 2020-12 unless its $schema
// says another draft (draft-07 included, whose meta-schemas are built in),
// no $ref outside the schema, and patterns in Go's regexp (RE2: linear in
// time, whatever the pattern).
func compileArgSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// Stage answers a tools/call whose arguments do not fit the tool's
// inputSchema (Call.Schema) with an isError result, and notes the verdict
// DecisionInvalidArgs. A call passes unchecked when checking is off for
// its group in Config, or when the schema is absent or cannot be
// compiled. It is built per config snapshot.
type Stage struct {
	Schemas *Schemas
	Config  *config.Config
	Logger  *slog.Logger
	// checks says, by group name, whether the group's calls are checked:
	// worked out once per snapshot (NewStage), not per call.
	checks map[string]bool

	// seen are the schemas this snapshot's calls met, by their bytes:
	// found by the map's own hash of them (no copy), before Schemas
	// hashes them with sha256 under the hub-wide lock, which each call
	// paid (issue 33).
	seenMu sync.RWMutex
	seen   map[string]*argSchema
}

// NewStage is the stage of the snapshot of cfg.
func NewStage(schemas *Schemas, cfg *config.Config, logger *slog.Logger) *Stage {
	s := &Stage{Schemas: schemas, Config: cfg, Logger: logger, checks: make(map[string]bool, len(cfg.Groups))}
	for _, g := range cfg.Groups {
		s.checks[g.Name] = cfg.Settings.ValidatesArgs(g)
	}
	return s
}

// groupConfig is the group of cfg named name, nil if none.
func groupConfig(cfg *config.Config, name string) *config.Group {
	for _, g := range cfg.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// english prints the library's messages for the kinds argProblems does
// not word itself.
var english = message.NewPrinter(language.English)

// argProblems are the violations of a failed validation, one line each:
// the JSON pointer of the value at fault and what is wrong with it.
func argProblems(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		at := "/" + strings.Join(e.InstanceLocation, "/")
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, fmt.Sprintf("%s: missing property '%s'", strings.TrimSuffix(at, "/")+"/"+m, m))
			}
		case *kind.Type:
			out = append(out, fmt.Sprintf("%s: expected %s, got %s", at, strings.Join(k.Want, " or "), k.Got))
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				out = append(out, fmt.Sprintf("%s: property '%s' is not allowed", strings.TrimSuffix(at, "/")+"/"+p, p))
			}
		default:
			out = append(out, at+": "+e.ErrorKind.LocalizedString(english))
		}
	}
	walk(ve)
	if len(out) > maxArgProblems {
		out = append(out[:maxArgProblems], fmt.Sprintf("(and %d more)", len(out)-maxArgProblems))
	}
	return out
}

// Error is the isError result of a call whose arguments do not fit: the
// heading, the problems one a line, and the tool's input schema, cut to
// maxSchemaInError bytes.
func Error(heading string, problems []string, schema json.RawMessage) json.RawMessage {
	var b strings.Builder
	b.WriteString(heading)
	for _, p := range problems {
		b.WriteString("\n- ")
		b.WriteString(p)
	}
	if len(schema) > 0 {
		b.WriteString("\nThe tool's input schema:\n")
		if len(schema) <= maxSchemaInError {
			b.Write(schema)
		} else {
			b.Write(schema[:maxSchemaInError])
			fmt.Fprintf(&b, "\n... (cut: %d bytes in all)", len(schema))
		}
	}
	return call.ToolError(b.String())
}
