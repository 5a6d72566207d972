package validateargs

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A call's arguments are checked here: the stage's work for each call
// (Handle), the schema found compiled, and the quick check of the
// arguments' bytes; validateargs.go compiles the schemas and words the
// answer to a call that does not fit.

// validates reports whether the calls of the group named group are
// checked: a group of no snapshot's (an upstream a reload moved before
// the hub) as settings.validate_args says.
func (s *Stage) validates(group string) bool {
	if v, ok := s.checks[group]; ok {
		return v
	}
	return s.Config.Settings.ValidatesArgs(groupConfig(s.Config, group))
}

// schema is the compiled raw; its schema is nil when it cannot be
// compiled.
func (s *Stage) schema(raw json.RawMessage, c *call.Call) *argSchema {
	s.seenMu.RLock()
	schema, ok := s.seen[string(raw)]
	s.seenMu.RUnlock()
	if ok {
		return schema
	}
	schema = s.Schemas.get(raw, c.Name, c.Server, s.Logger)
	s.seenMu.Lock()
	if s.seen == nil {
		s.seen = map[string]*argSchema{}
	}
	if len(s.seen) < maxArgSchemas {
		s.seen[string(raw)] = schema
	}
	s.seenMu.Unlock()
	return schema
}

// Handle checks c's arguments, then passes it on or answers it.
func (s *Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if bad := s.check(c); bad != nil {
		return bad, nil
	}
	return next.Handle(ctx, c)
}

func (s *Stage) check(c *call.Call) json.RawMessage {
	raw := c.Schema
	if len(raw) == 0 || raw[0] != '{' || !s.validates(c.Server.Group) {
		return nil
	}
	schema := s.schema(raw, c)
	if schema.schema == nil {
		return nil
	}
	arguments := c.Args
	if len(arguments) == 0 || string(arguments) == "null" {
		arguments = json.RawMessage("{}")
	}
	if schema.quick != nil && schema.quick.valid(arguments) {
		return nil // valid, read where it lies
	}
	inst, err := instance(arguments)
	if err != nil {
		return nil // not JSON the hub can read: the upstream answers it
	}
	err = schema.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError // made only for a failure: errors.As keeps it
	if !errors.As(err, &ve) {
		return nil
	}
	c.Args, c.Notes.Verdict = arguments, call.DecisionInvalidArgs // as the audit record shows them
	return Error("Invalid arguments for tool "+c.CalledName()+":", argProblems(ve), raw)
}

// The quick check reads a call's arguments where they lie, as bytes,
// against a compiled schema that uses only the keywords most tools' input
// schemas use (type, properties, required, additionalProperties, items,
// lengths and counts, string enums, pattern, format, integer bounds,
// allOf, anyOf, a local $ref: what pydantic and zod write). It
// can only say "valid": anything it cannot decide from the bytes (an
// escaped string it would have to compare, a number it would have to
// convert, a keyword it does not know) is left to the validator, which
// decodes the arguments and walks them, as every call did before: about
// 16 allocations and most of the stage's time a call, for the common
// call whose arguments fit (issue 32's regression of the stdio call).

// kinds is a set of JSON kinds, as a schema's type names them.
type kinds uint8

const (
	kindNull kinds = 1 << iota
	kindBoolean
	kindNumber
	kindInteger
	kindString
	kindArray
	kindObject
)

var kindNames = map[string]kinds{"null": kindNull, "boolean": kindBoolean, "number": kindNumber,
	"integer": kindInteger, "string": kindString, "array": kindArray, "object": kindObject}

// quickNode is one schema as the quick check reads it; the zero value
// lets every value through (the schema true, or {}).
type quickNode struct {
	types kinds // 0: every kind

	// members are properties' schemas and required names, each with its
	// index in required (-1 if not required); node is nil for a name
	// required but not in properties.
	members    map[string]quickMember
	required   int        // how many names are required
	additional *quickNode // additionalProperties' schema; nil: any value
	closed     bool       // additionalProperties: false

	items              *quickNode // nil: any value
	minItems, maxItems int        // -1: none

	// Of a string: these need it unescaped, so a string with an escape
	// is left to the validator.
	minLength, maxLength int // -1: none
	enum                 []string
	pattern              jsonschema.Regexp
	format               *jsonschema.Format

	// Of a number: inclusive integer bounds; a number that is not a
	// plain integer is left to the validator when any is set.
	min, max       int64
	bounded        bool
	integerMeaning bool // types has integer and not number: a plain integer fits

	// allOf ($ref's target among them) must all pass, one of anyOf.
	allOf, anyOf []*quickNode
}

type quickMember struct {
	node *quickNode
	req  int
}

// quickDepth bounds how deep the quick check follows a schema, in the
// arguments and through allOf, anyOf and $ref (which may make it
// recursive); deeper is the validator's.
const quickDepth = 64

// quickOf is the quick check of s, nil when s uses a keyword it does not
// decide.
func quickOf(s *jsonschema.Schema) *quickNode {
	b := quickBuilder{}
	return b.node(s)
}

// quickBuilder builds each schema's node once: a $ref back to a schema
// being built (a recursive definition) is the node under way.
type quickBuilder struct {
	built  map[*jsonschema.Schema]*quickNode
	failed bool
	depth  int // of node calls: draft-07 $refs that only lead to each other
}

func (b *quickBuilder) node(s *jsonschema.Schema) *quickNode {
	if n, ok := b.built[s]; ok {
		return n
	}
	if b.depth++; b.depth > 1000 {
		b.failed = true
	}
	n := b.build(s)
	b.depth--
	if n == nil {
		b.failed = true
	}
	if b.failed {
		return nil
	}
	return n
}

func (b *quickBuilder) build(s *jsonschema.Schema) *quickNode {
	if s == nil || b.failed {
		return nil
	}
	if s.Bool != nil {
		if *s.Bool {
			return &quickNode{minItems: -1, maxItems: -1, minLength: -1, maxLength: -1}
		}
		return nil
	}
	if s.Ref != nil && s.DraftVersion < 2019 {
		return b.node(s.Ref) // before 2019-09 a $ref's siblings are not read
	}
	if s.RecursiveRef != nil || s.DynamicRef != nil || s.Const != nil || s.Not != nil ||
		s.OneOf != nil || s.If != nil || s.Then != nil || s.Else != nil ||
		s.MaxProperties != nil || s.MinProperties != nil || s.PropertyNames != nil || s.PatternProperties != nil ||
		s.Dependencies != nil || s.DependentRequired != nil || s.DependentSchemas != nil || s.UnevaluatedProperties != nil ||
		s.UniqueItems || s.Contains != nil || s.MinContains != nil || s.MaxContains != nil || s.AdditionalItems != nil ||
		s.PrefixItems != nil || s.UnevaluatedItems != nil || s.ContentEncoding != nil || s.ContentMediaType != nil ||
		s.ContentSchema != nil || s.MultipleOf != nil || s.Extensions != nil || len(s.Required) > 64 {
		return nil
	}
	n := &quickNode{minItems: intOr(s.MinItems), maxItems: intOr(s.MaxItems),
		minLength: intOr(s.MinLength), maxLength: intOr(s.MaxLength), pattern: s.Pattern, format: s.Format,
		min: math.MinInt64, max: math.MaxInt64}
	if b.built == nil {
		b.built = map[*jsonschema.Schema]*quickNode{}
	}
	b.built[s] = n // before its parts: a $ref back to s finds it
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			n.types |= kindNames[t]
		}
		n.integerMeaning = n.types&kindInteger != 0 && n.types&kindNumber == 0
	}
	if s.Enum != nil {
		n.enum = make([]string, 0, len(s.Enum.Values))
		for _, v := range s.Enum.Values {
			str, ok := v.(string)
			if !ok {
				return nil
			}
			n.enum = append(n.enum, str)
		}
	}
	if !n.bound(s.Minimum, 0, false) || !n.bound(s.ExclusiveMinimum, 1, false) ||
		!n.bound(s.Maximum, 0, true) || !n.bound(s.ExclusiveMaximum, -1, true) {
		return nil
	}
	if len(s.Properties) > 0 || len(s.Required) > 0 {
		n.members = make(map[string]quickMember, len(s.Properties)+len(s.Required))
	}
	for name, p := range s.Properties {
		sub := b.node(p)
		if sub == nil {
			return nil
		}
		n.members[name] = quickMember{node: sub, req: -1}
	}
	for _, name := range s.Required {
		m, ok := n.members[name]
		if ok && m.req >= 0 {
			continue // required twice
		}
		m.req = n.required // m.node nil when not in properties
		n.required++
		n.members[name] = m
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		n.closed = !a
	case *jsonschema.Schema:
		if n.additional = b.node(a); n.additional == nil {
			return nil
		}
	default:
		return nil
	}
	items := s.Items2020
	switch it := s.Items.(type) {
	case nil:
	case *jsonschema.Schema:
		items = it
	default: // a tuple
		return nil
	}
	if items != nil {
		if n.items = b.node(items); n.items == nil {
			return nil
		}
	}
	all := s.AllOf
	if s.Ref != nil {
		all = append(all[:len(all):len(all)], s.Ref)
	}
	for _, list := range []struct {
		from []*jsonschema.Schema
		to   *[]*quickNode
	}{{all, &n.allOf}, {s.AnyOf, &n.anyOf}} {
		for _, sub := range list.from {
			q := b.node(sub)
			if q == nil {
				return nil
			}
			*list.to = append(*list.to, q)
		}
	}
	return n
}

func intOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// bound narrows n's integer bounds by r (+ by, for an exclusive one): as
// an upper bound when upper. It is false when r is not an integer the
// check can hold a plain integer against.
func (n *quickNode) bound(r *big.Rat, by int64, upper bool) bool {
	if r == nil {
		return true
	}
	if !r.IsInt() || !r.Num().IsInt64() {
		return false
	}
	v := r.Num().Int64()
	if (by > 0 && v == math.MaxInt64) || (by < 0 && v == math.MinInt64) {
		return false
	}
	v += by
	n.bounded = true
	if upper {
		n.max = min(n.max, v)
	} else {
		n.min = max(n.min, v)
	}
	return true
}

// valid reports whether args (the whole arguments) are valid against n
// for sure; false is "not sure", for the validator to decide.
func (n *quickNode) valid(args []byte) bool {
	budget := 1024 + 2*len(args) // checks: allOf and anyOf read a value again, a cycle of them for ever
	end, ok := n.check(args, jsonrpc.SkipSpace(args, 0), 0, &budget)
	return ok && jsonrpc.SkipSpace(args, end) == len(args)
}

// check reads the value at b[i:], depth deep in the arguments, against
// n: where it ends, and whether it is valid for sure.
func (n *quickNode) check(b []byte, i, depth int, budget *int) (int, bool) {
	if *budget--; *budget < 0 || depth > quickDepth {
		return 0, false
	}
	end, ok := n.own(b, i, depth, budget)
	for _, sub := range n.allOf {
		if ok {
			_, ok = sub.check(b, i, depth+1, budget)
		}
	}
	if ok && n.anyOf != nil {
		ok = false
		for _, sub := range n.anyOf {
			if _, ok = sub.check(b, i, depth+1, budget); ok {
				break
			}
		}
	}
	return end, ok
}

// own is check of n's own keywords.
func (n *quickNode) own(b []byte, i, depth int, budget *int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	var k kinds
	switch b[i] {
	case '{':
		k = kindObject
	case '[':
		k = kindArray
	case '"':
		k = kindString
	case 't', 'f':
		k = kindBoolean
	case 'n':
		k = kindNull
	default:
		k = kindNumber
	}
	if n.types != 0 && n.types&k == 0 && !(k == kindNumber && n.types&kindInteger != 0) {
		return 0, false
	}
	if n.enum != nil && k != kindString || n.format != nil && k != kindString {
		return 0, false
	}
	switch k {
	case kindObject:
		return n.object(b, i, depth, budget)
	case kindArray:
		return n.array(b, i, depth, budget)
	case kindString:
		return n.str(b, i)
	case kindNumber:
		return n.number(b, i)
	case kindBoolean:
		if b[i] == 't' {
			return i + 4, i+4 <= len(b)
		}
		return i + 5, i+5 <= len(b)
	}
	return i + 4, i+4 <= len(b)
}

func (n *quickNode) object(b []byte, i, depth int, budget *int) (int, bool) {
	var met uint64 // required names met, by index
	i = jsonrpc.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, n.required == 0
	}
	for i < len(b) && b[i] == '"' {
		end, plain := jsonrpc.SkipString(b, i)
		if end < 0 || !plain || !utf8.Valid(b[i+1:end-1]) {
			return 0, false // a key with an escape may name any member
		}
		m, named := n.members[string(b[i+1:end-1])]
		i = jsonrpc.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = jsonrpc.SkipSpace(b, i+1)
		if named && m.req >= 0 {
			met |= 1 << m.req
		}
		sub := m.node
		if sub == nil { // not in properties
			if n.closed {
				return 0, false
			}
			sub = n.additional
		}
		ok := true
		if sub != nil {
			i, ok = sub.check(b, i, depth+1, budget)
		} else {
			i = skip(b, i)
		}
		if !ok || i < 0 {
			return 0, false
		}
		i = jsonrpc.SkipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return i + 1, met == 1<<n.required-1
		}
		if i >= len(b) || b[i] != ',' {
			return 0, false
		}
		i = jsonrpc.SkipSpace(b, i+1)
	}
	return 0, false
}

func (n *quickNode) array(b []byte, i, depth int, budget *int) (int, bool) {
	count := 0
	i = jsonrpc.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, n.minItems <= 0
	}
	for i < len(b) {
		ok := true
		if n.items != nil {
			i, ok = n.items.check(b, i, depth+1, budget)
		} else {
			i = skip(b, i)
		}
		if !ok || i < 0 {
			return 0, false
		}
		count++
		i = jsonrpc.SkipSpace(b, i)
		if i < len(b) && b[i] == ']' {
			return i + 1, count >= n.minItems && (n.maxItems < 0 || count <= n.maxItems)
		}
		if i >= len(b) || b[i] != ',' {
			return 0, false
		}
		i = jsonrpc.SkipSpace(b, i+1)
	}
	return 0, false
}

func (n *quickNode) str(b []byte, i int) (int, bool) {
	end, plain := jsonrpc.SkipString(b, i)
	if end < 0 {
		return 0, false
	}
	if n.minLength < 0 && n.maxLength < 0 && n.enum == nil && n.pattern == nil && n.format == nil {
		return end, true
	}
	s := b[i+1 : end-1]
	if !plain || !utf8.Valid(s) {
		return 0, false
	}
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCount(s)
		if l < n.minLength || n.maxLength >= 0 && l > n.maxLength {
			return 0, false
		}
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if e == string(s) {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	if n.pattern != nil || n.format != nil {
		str := string(s)
		if n.pattern != nil && !n.pattern.MatchString(str) || n.format != nil && n.format.Validate(str) != nil {
			return 0, false
		}
	}
	return end, true
}

// number reads a number: any, when the schema says nothing of its value;
// a plain integer (no fraction or exponent) held against the bounds and
// an integer type; else the validator decides.
func (n *quickNode) number(b []byte, i int) (int, bool) {
	end, ok := jsonrpc.SkipNumber(b, i)
	if !ok {
		return 0, false
	}
	if !n.bounded && !n.integerMeaning {
		return end, true
	}
	v, ok := jsonrpc.PlainInt(b[i:end])
	return end, ok && v >= n.min && v <= n.max
}

// skip is the end of the value at b[i] that no schema constrains, -1
// where b holds none (SkipValue finds an empty one before a delimiter).
func skip(b []byte, i int) int {
	if end := jsonrpc.SkipValue(b, i); end > i {
		return end
	}
	return -1
}
