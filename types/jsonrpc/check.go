package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// Errors Check reports; callers branch on them with errors.Is.
var (
	ErrNotJSON      = errors.New("not valid JSON")
	ErrTooDeep      = fmt.Errorf("nested deeper than %d levels", MaxDepth)
	ErrDuplicateKey = errors.New("an object has a key twice")
)

// CheckError says what is wrong with a message and where.
type CheckError struct {
	Err    error
	Offset int    // byte offset of the problem
	Key    string // the repeated key, for ErrDuplicateKey
	Depth  int    // nesting depth of the object holding Key (1 = top level)
}

func (e *CheckError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%v: %q (at byte %d)", e.Err, clip.Echo(e.Key), e.Offset)
	}
	return fmt.Sprintf("%v (at byte %d)", e.Err, e.Offset)
}

func (e *CheckError) Unwrap() error { return e.Err }

// Check reports whether msg is exactly one JSON value, nested at most
// maxDepth deep, with no object holding two keys that are equal or differ
// only in case. encoding/json would silently keep the last of two keys and
// match fields case-insensitively, so a message built to read one way to
// the hub and another to an upstream is refused instead.
func Check(msg []byte, maxDepth int) error {
	c := checker{b: msg, maxDepth: maxDepth}
	c.space()
	if err := c.value(0); err != nil {
		return err
	}
	c.space()
	if c.i != len(c.b) {
		return c.fail(ErrNotJSON)
	}
	return nil
}

type checker struct {
	b        []byte
	i        int
	maxDepth int
	// decoding says Decode wants the top-level members, in top: kept in
	// the checker, not pointed to, so that a Decode allocates no envelope.
	decoding bool
	top      envelope
}

func (c *checker) fail(err error) *CheckError { return &CheckError{Err: err, Offset: c.i} }

func (c *checker) space() { c.i = SkipSpace(c.b, c.i) }

func (c *checker) value(depth int) error {
	if c.i >= len(c.b) {
		return c.fail(ErrNotJSON)
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == '"':
		_, err := c.str()
		return err
	case ch == '-' || (ch >= '0' && ch <= '9'):
		end, ok := SkipNumber(c.b, c.i)
		if !ok {
			return &CheckError{Err: ErrNotJSON, Offset: c.i}
		}
		c.i = end
		return nil
	default:
		for _, lit := range literals {
			if bytes.HasPrefix(c.b[c.i:], lit) {
				c.i += len(lit)
				return nil
			}
		}
		return c.fail(ErrNotJSON)
	}
}

var literals = [][]byte{[]byte("true"), []byte("false"), []byte("null")}

// smallObject is how many keys an object holds before its keys go in a map.
const smallObject = 8

func (c *checker) object(depth int) error {
	if depth > c.maxDepth {
		return c.fail(ErrTooDeep)
	}
	c.i++ // {
	c.space()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return nil
	}
	// Keys are compared case-insensitively: byte slices into the message
	// while the object is small, a map of folded keys once it is large.
	var few [smallObject][]byte
	n := 0
	var many map[string]struct{}
	for {
		c.space()
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return c.fail(ErrNotJSON)
		}
		at := c.i
		key, err := c.str()
		if err != nil {
			return err
		}
		dup := false
		switch {
		case many != nil:
			folded := string(bytes.ToLower(key))
			_, dup = many[folded]
			many[folded] = struct{}{}
		case n < smallObject:
			for _, k := range few[:n] {
				dup = dup || bytes.EqualFold(k, key)
			}
			few[n] = key
			n++
		default:
			many = make(map[string]struct{}, 4*smallObject)
			for _, k := range few {
				many[string(bytes.ToLower(k))] = struct{}{}
			}
			folded := string(bytes.ToLower(key))
			_, dup = many[folded]
			many[folded] = struct{}{}
		}
		if dup {
			return &CheckError{Err: ErrDuplicateKey, Offset: at, Key: string(key), Depth: depth}
		}
		c.space()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return c.fail(ErrNotJSON)
		}
		c.i++
		c.space()
		start := c.i
		if err := c.value(depth); err != nil {
			return err
		}
		if depth == 1 && c.decoding {
			c.top.set(key, c.b[start:c.i])
		}
		c.space()
		if c.i >= len(c.b) {
			return c.fail(ErrNotJSON)
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return nil
		default:
			return c.fail(ErrNotJSON)
		}
	}
}

func (c *checker) array(depth int) error {
	if depth > c.maxDepth {
		return c.fail(ErrTooDeep)
	}
	c.i++ // [
	c.space()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return nil
	}
	for {
		c.space()
		if err := c.value(depth); err != nil {
			return err
		}
		c.space()
		if c.i >= len(c.b) {
			return c.fail(ErrNotJSON)
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return nil
		default:
			return c.fail(ErrNotJSON)
		}
	}
}

// str scans a string and returns its value: a slice of the message when
// it has no escapes, decoded otherwise. Like encoding/json it lets invalid
// UTF-8 through (to be replaced there).
func (c *checker) str() ([]byte, error) {
	start := c.i
	c.i++ // "
	escaped := false
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			c.i++
			raw := c.b[start:c.i]
			if !escaped {
				return raw[1 : len(raw)-1], nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, &CheckError{Err: ErrNotJSON, Offset: start}
			}
			return []byte(s), nil
		case ch == '\\':
			escaped = true
			c.i += 2
		case ch < 0x20:
			return nil, c.fail(ErrNotJSON)
		default:
			c.i++
		}
	}
	return nil, c.fail(ErrNotJSON)
}
