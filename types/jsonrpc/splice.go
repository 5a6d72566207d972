package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"
)

// The hub passes results and definitions through byte for byte (see
// DESIGN.md, "Bytes pass through"): what it must change in an object it
// splices in, leaving every other byte where it was. Decoding into a map and
// encoding again would sort the keys, drop whitespace and turn <, > and &
// into \u003c, \u003e and \u0026, even inside a json.RawMessage.

// ErrNotObject is returned when what should be a JSON object is some other
// value.
var ErrNotObject = errors.New("not a JSON object")

// errKeyNotUTF8 refuses a key encoding/json would have to alter to write.
var errKeyNotUTF8 = errors.New("key is not valid UTF-8")

// Member is one key of an object with its value, raw JSON.
type Member struct {
	Key   string
	Value []byte
}

// Object is a JSON object whose top-level members were found in one pass,
// so that reading or replacing them costs no further pass over its bytes.
// Decode has checked a message's params whole (framing, depth, keys
// unique): the hub scans them once into an Object and reads them from it,
// where Field and SetField would check the whole object again each time.
// The zero Object has no members.
type Object struct {
	b []byte
	o object
}

// ScanObject finds the top-level members of b, which must be valid JSON
// already, checked by Decode or Check: it does not validate b again. It
// returns ErrNotObject when b is some other value (or nothing). Given bytes
// that are not valid JSON it returns an error or an Object whose reads
// are meaningless, but never reads past b. Object shares b's memory.
func ScanObject(b []byte) (Object, error) {
	o, err := scan(b)
	if err != nil {
		return Object{}, err
	}
	return Object{b: b, o: o}, nil
}

// ParseObject is ScanObject for bytes nobody has checked: it validates
// them first.
func ParseObject(b []byte) (Object, error) {
	if !json.Valid(b) {
		return Object{}, ErrNotJSON
	}
	return ScanObject(b)
}

// Bytes is the object as it was scanned.
func (o Object) Bytes() []byte { return o.b }

// Len is how many members the object has.
func (o Object) Len() int { return len(o.o.members) }

// Field is Field for a scanned object: the raw value of key, nil when the
// object lacks it or has it twice. The value shares the object's memory
// and must not be modified.
func (o Object) Field(key string) []byte {
	i, err := o.o.find(o.b, key)
	if err != nil || i < 0 {
		return nil
	}
	m := o.o.members[i]
	return o.b[m.valStart:m.valEnd:m.valEnd]
}

// With returns a copy of the object in which each of members has its
// value: replaced where the key stands, appended after the last member
// where the object lacks it; every other byte is kept. The values are not
// validated: they must be valid JSON (the hub's own encodings, or values
// read from a checked message).
func (o Object) With(members ...Member) ([]byte, error) {
	if o.b == nil {
		return nil, ErrNotObject
	}
	type edit struct {
		start, end int // the bytes replaced; start == end for an insertion
		val        []byte
	}
	var room [2]edit // Call.Outgoing's at most: not an allocation of its own
	edits := room[:0]
	var add []Member
	for _, m := range members {
		i, err := o.o.find(o.b, m.Key)
		if err != nil {
			return nil, err
		}
		if i < 0 {
			if !utf8.ValidString(m.Key) {
				return nil, errKeyNotUTF8
			}
			if !hasKey(add, m.Key) {
				add = append(add, m)
			}
			continue
		}
		edits = append(edits, edit{o.o.members[i].valStart, o.o.members[i].valEnd, trimSpace(m.Value)})
	}
	if len(add) > 0 {
		at := o.o.open + 1
		if n := len(o.o.members); n > 0 {
			at = o.o.members[n-1].valEnd
		}
		var ins []byte
		for i, m := range add {
			if i > 0 || len(o.o.members) > 0 {
				ins = append(ins, ',')
			}
			k, err := Marshal(m.Key)
			if err != nil {
				return nil, err
			}
			ins = append(append(append(ins, k...), ':'), trimSpace(m.Value)...)
		}
		edits = append(edits, edit{at, at, ins})
	}
	slices.SortStableFunc(edits, func(a, b edit) int { return a.start - b.start })
	n := len(o.b)
	for _, e := range edits {
		n += len(e.val) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range edits {
		if e.start < last { // the same key twice in members: the first wins
			continue
		}
		out = append(out, o.b[last:e.start]...)
		out = append(out, e.val...)
		last = e.end
	}
	return append(out, o.b[last:]...), nil
}

// Field returns the raw value of key at the top level of obj, without
// decoding the rest. It returns nil when obj is not a valid object, has no
// such key, or has it twice. The value shares obj's memory and must not be
// modified.
func Field(obj []byte, key string) []byte {
	o, err := scanObject(obj)
	if err != nil {
		return nil
	}
	i, err := o.find(obj, key)
	if err != nil || i < 0 {
		return nil
	}
	m := o.members[i]
	return obj[m.valStart:m.valEnd:m.valEnd]
}

// SetField returns a copy of obj in which key has value: its old value
// replaced where it stood, or, when obj lacks key, a new member after the
// last one. Every other byte of obj is kept. value must be valid JSON.
func SetField(obj []byte, key string, value []byte) ([]byte, error) {
	if !json.Valid(value) {
		return nil, ErrNotJSON
	}
	value = trimSpace(value)
	o, err := scanObject(obj)
	if err != nil {
		return nil, err
	}
	i, err := o.find(obj, key)
	if err != nil {
		return nil, err
	}
	if i < 0 {
		return o.appendMembers(obj, []Member{{Key: key, Value: value}})
	}
	m := o.members[i]
	out := make([]byte, 0, len(obj)-(m.valEnd-m.valStart)+len(value))
	out = append(out, obj[:m.valStart]...)
	out = append(out, value...)
	return append(out, obj[m.valEnd:]...), nil
}

// AddMissing returns a copy of obj with each of members that obj does not
// already have at its top level appended after its last member, in order.
// A key obj has keeps its value, and every byte of obj is kept. Values must
// be valid JSON.
func AddMissing(obj []byte, members ...Member) ([]byte, error) {
	o, err := scanObject(obj)
	if err != nil {
		return nil, err
	}
	var add []Member
	for _, m := range members {
		if !json.Valid(m.Value) {
			return nil, ErrNotJSON
		}
		m.Value = trimSpace(m.Value)
		i, err := o.find(obj, m.Key)
		if err != nil {
			return nil, err
		}
		if i < 0 && !hasKey(add, m.Key) {
			add = append(add, m)
		}
	}
	if len(add) == 0 {
		return bytes.Clone(obj), nil
	}
	return o.appendMembers(obj, add)
}

// DeleteField returns a copy of obj without key at its top level, with the
// comma that separated it; every other byte is kept.
func DeleteField(obj []byte, key string) ([]byte, error) {
	o, err := scanObject(obj)
	if err != nil {
		return nil, err
	}
	i, err := o.find(obj, key)
	if err != nil {
		return nil, err
	}
	if i < 0 {
		return bytes.Clone(obj), nil
	}
	m := o.members[i]
	start, end := m.keyStart, m.valEnd
	switch {
	case i+1 < len(o.members): // up to the next key: the comma and the space after it
		end = o.members[i+1].keyStart
	case i > 0: // the last of several: from the end of the one before, with the comma
		start = o.members[i-1].valEnd
	}
	out := make([]byte, 0, len(obj)-(end-start))
	out = append(out, obj[:start]...)
	return append(out, obj[end:]...), nil
}

// Marshal is json.Marshal without HTML escaping: <, > and & stay as they
// are, as in the text an LLM reads. Like json.Marshal it compacts a
// json.RawMessage inside v; splice raw bytes that must be kept whole.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// object is where the parts of a scanned object are: byte offsets into it.
type object struct {
	open, close int // the braces
	members     []member
}

type member struct {
	keyStart, keyEnd int // the key with its quotes
	valStart, valEnd int
}

// scanObject finds the top-level members of obj, which must be one valid
// JSON object, optionally surrounded by whitespace.
func scanObject(obj []byte) (object, error) {
	if !json.Valid(obj) {
		return object{}, ErrNotJSON
	}
	return scan(obj)
}

// scan finds the top-level members of obj without validating it: one pass
// over its bytes. Given bytes that are not valid JSON it returns an error
// or offsets of no meaning, but never reads past obj.
func scan(obj []byte) (object, error) {
	open, i, err := openObject(obj)
	if err != nil {
		return object{}, err
	}
	o := object{open: open}
	for {
		var m member
		if m, i, err = nextMember(obj, i); err != nil || m.keyEnd == 0 {
			break
		}
		if o.members == nil {
			// Room for a tool call's params (name, arguments, _meta):
			// append's growth from one was an allocation each member.
			o.members = make([]member, 0, 4)
		}
		o.members = append(o.members, m)
	}
	if err != nil {
		return object{}, err
	}
	o.close = i
	return o, nil
}

// EachMember calls f with each top-level member of obj, in order, until
// f returns false: its key raw, with its quotes (KeyEquals reads it), and
// its value, which shares obj's memory and must not be modified. obj must
// be valid JSON already, as for ScanObject; it returns ErrNotObject when
// obj is some other value. Unlike ScanObject it keeps nothing, and so
// allocates nothing: for a reader that looks at each member once.
func EachMember(obj []byte, f func(key, value []byte) bool) error {
	_, i, err := openObject(obj)
	for err == nil {
		var m member
		if m, i, err = nextMember(obj, i); err != nil || m.keyEnd == 0 {
			break
		}
		if !f(obj[m.keyStart:m.keyEnd], obj[m.valStart:m.valEnd:m.valEnd]) {
			break
		}
	}
	return err
}

// openObject finds the opening brace of the object obj holds: its offset
// (open), and the offset past it and the white space after it (next).
func openObject(obj []byte) (open, next int, err error) {
	open = SkipSpace(obj, 0)
	if open >= len(obj) || obj[open] != '{' {
		return 0, 0, ErrNotObject
	}
	return open, SkipSpace(obj, open+1), nil
}

// nextMember reads the member at i, and returns it with the offset of
// what follows it (past its comma and white space); at the closing brace
// it returns the zero member and the brace's offset.
func nextMember(obj []byte, i int) (member, int, error) {
	var m member
	if i < len(obj) && obj[i] == '}' {
		return m, i, nil
	}
	if i >= len(obj) || obj[i] != '"' {
		return m, i, ErrNotJSON
	}
	m.keyStart = i
	if i, _ = SkipString(obj, i); i < 0 {
		return m, i, ErrNotJSON
	}
	m.keyEnd = i
	i = SkipSpace(obj, i)
	if i >= len(obj) || obj[i] != ':' {
		return m, i, ErrNotJSON
	}
	i = SkipSpace(obj, i+1)
	m.valStart = i
	if i = SkipValue(obj, i); i < 0 {
		return m, i, ErrNotJSON
	}
	m.valEnd = i
	i = SkipSpace(obj, i)
	if i < len(obj) && obj[i] == ',' {
		i = SkipSpace(obj, i+1)
	}
	return m, i, nil
}

// find returns the index of key's member, -1 when obj lacks it, or
// ErrDuplicateKey when obj has it twice and a reader could take either.
func (o *object) find(obj []byte, key string) (int, error) {
	found := -1
	for i, m := range o.members {
		if !KeyEquals(obj[m.keyStart:m.keyEnd], key) {
			continue
		}
		if found >= 0 {
			return -1, &CheckError{Err: ErrDuplicateKey, Offset: m.keyStart, Key: key, Depth: 1}
		}
		found = i
	}
	return found, nil
}

// appendMembers writes add after o's last member (right after its value,
// so whitespace before the closing brace stays where it was).
func (o *object) appendMembers(obj []byte, add []Member) ([]byte, error) {
	at := o.open + 1
	if n := len(o.members); n > 0 {
		at = o.members[n-1].valEnd
	}
	var b bytes.Buffer
	b.Grow(len(obj) + 16*len(add))
	b.Write(obj[:at])
	for i, m := range add {
		if !utf8.ValidString(m.Key) {
			return nil, errKeyNotUTF8
		}
		if i > 0 || len(o.members) > 0 {
			b.WriteByte(',')
		}
		k, err := Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.Write(obj[at:])
	return b.Bytes(), nil
}

// KeyEquals reports whether the raw key (with its quotes) decodes to key.
func KeyEquals(raw []byte, key string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner) == key
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == key
}

func hasKey(ms []Member, key string) bool {
	for _, m := range ms {
		if m.Key == key {
			return true
		}
	}
	return false
}

// The skip functions move past one part of JSON and return the offset
// just after it. They check no more than they must to find that end:
// given bytes that are not JSON they return an offset of no meaning, or
// -1, but never one past b. They are the hub's one reader of each kind
// of JSON where it lies: the argument check's quick path
// (server/validateargs) and redaction (types/redact) use them too.

// SkipSpace is i moved past JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// trimSpace drops the whitespace around a valid value.
func trimSpace(b []byte) []byte {
	i := SkipSpace(b, 0)
	j := len(b)
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\n' || b[j-1] == '\r') {
		j--
	}
	return b[i:j]
}

// SkipString is the end of the string whose opening quote is b[i], -1
// when b ends inside it; plain reports that the string holds no escape
// (its bytes between the quotes are its value, when they are valid UTF-8
// and hold no control character).
func SkipString(b []byte, i int) (end int, plain bool) {
	plain = true
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			plain = false
			i++ // the escaped byte, which may be a quote
		case '"':
			return i + 1, plain
		}
	}
	return -1, false
}

// SkipValue is the end of the value at b[i], -1 when b ends inside it or
// before it. A string, object or array ends at its closing quote or
// bracket; anything else (a number, true, false, null) at the next
// delimiter, so that a delimiter at b[i] is an empty value, ending at i.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := SkipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, _ := SkipString(b, i)
				if end < 0 {
					return -1
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // a number, true, false or null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// SkipNumber is the end of the JSON number at b[i] (RFC 8259, section 6:
// no leading zero, digits on both sides of a point, an exponent with
// digits), false when b holds none there.
func SkipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	if i = skipDigits(b, i); i == start || (i-start > 1 && b[start] == '0') {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if start, i = i+1, skipDigits(b, i+1); i == start {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if start, i = i, skipDigits(b, i); i == start {
			return i, false
		}
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// PlainInt is b as an int64 when b is a minus sign or none and 1 to 18
// decimal digits (18 always fit), false for any other bytes.
func PlainInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// StringValue decodes a raw JSON string, such as a value Field returned;
// ok is false for any other value. A string without escapes costs one copy.
func StringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
