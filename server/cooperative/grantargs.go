package cooperative

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
)

// ExactArgs is the grant pattern that covers args as given and no other
// values: each value at its dotted path, its glob characters escaped; a
// list of values as the alternatives {a,b} (a call with fewer of them is
// covered too). Arguments no pattern can state so (a list of objects or
// lists) are refused: the grant would cover more than was asked.
func ExactArgs(args json.RawMessage) (*policy.ArgsMatcher, map[string]string, error) {
	if len(args) == 0 || string(args) == "null" {
		return nil, nil, nil
	}
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	out := map[string]string{}
	var walk func(prefix string, v any) error
	walk = func(prefix string, v any) error {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if strings.Contains(k, ".") || k == policy.AnyArg {
					return fmt.Errorf("argument %q cannot be named in a grant", k)
				}
				if err := walk(strings.TrimPrefix(prefix+"."+k, "."), x[k]); err != nil {
					return err
				}
			}
		case []any:
			alts := make([]string, 0, len(x))
			for _, el := range x {
				s, ok := scalar(el)
				if !ok {
					return fmt.Errorf("argument %s is a list of objects or lists, which a grant cannot state exactly", prefix)
				}
				alts = append(alts, escapeGlob(s))
			}
			if len(alts) > 0 {
				out[prefix] = "{" + strings.Join(alts, ",") + "}"
			}
		default:
			s, _ := scalar(x)
			out[prefix] = escapeGlob(s)
		}
		return nil
	}
	if err := walk("", v); err != nil {
		return nil, nil, err
	}
	m, err := policy.NewArgsMatcher(out)
	if err != nil {
		return nil, nil, err
	}
	if !m.Match(args) {
		return nil, nil, fmt.Errorf("no grant pattern states these arguments exactly")
	}
	return m, out, nil
}

// scalar is a JSON value that is no object or list as a rule's glob reads
// it.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return fmt.Sprint(x), true
	case nil:
		return "null", true
	}
	return "", false
}

// escapeGlob is s as a glob that matches s alone.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*?[]{},`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
