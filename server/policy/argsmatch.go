package policy

import (
	"bytes"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// ArgsMatcher matches tool arguments against the globs of a rule's args:
// (a dotted argument path, or AnyArg, to a glob), read as an allow rule
// reads them: every value at a path must match its glob. Approval grants
// narrowed to an argument pattern use it.
type ArgsMatcher struct {
	args []argMatch
}

// NewArgsMatcher compiles args; an error names a glob that does not.
func NewArgsMatcher(args map[string]string) (*ArgsMatcher, error) {
	rs := compile([]config.Rule{{Action: config.ActionAllow, Tool: "*", Args: args}})
	if rs[0].broken != nil {
		return nil, rs[0].broken
	}
	return &ArgsMatcher{args: rs[0].args}, nil
}

// Match reports whether args (a tool's JSON arguments) match every glob.
// Arguments that are not JSON, or have no value at a path, do not match.
func (m *ArgsMatcher) Match(args json.RawMessage) (ok bool) {
	if m == nil || len(m.args) == 0 {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return false
	}
	for _, a := range m.args {
		if ok, err := a.matches(v, true); err != nil || !ok {
			return false
		}
	}
	return true
}
