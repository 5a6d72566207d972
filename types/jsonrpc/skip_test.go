package jsonrpc

import (
	"encoding/json"
	"testing"
)

// The skip functions find where a value ends, -1 where b ends inside it,
// and never an offset past b, whatever the bytes.
func TestSkipValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`"a\"b" `, 6}, {`"a\`, -1}, {`"`, -1}, {`{"a":[1,"]"]},`, 13}, {`[[]`, -1}, {`{"a":"}`, -1},
		{`12.5e3,`, 6}, {`true}`, 4}, {`null`, 4}, {`,`, 0}, {`}`, 0}, {``, -1},
	} {
		if got := SkipValue([]byte(c.in), 0); got != c.want {
			t.Errorf("SkipValue(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in    string
		end   int
		plain bool
	}{{`"ab"`, 4, true}, {`"a\nb"`, 6, false}, {`"a\"`, -1, false}, {`"é"x`, 4, true}} {
		if end, plain := SkipString([]byte(c.in), 0); end != c.end || plain != c.plain {
			t.Errorf("SkipString(%q) = %d, %v; want %d, %v", c.in, end, plain, c.end, c.plain)
		}
	}
}

// SkipNumber reads what RFC 8259 calls a number, as encoding/json does.
func TestSkipNumber(t *testing.T) {
	for _, in := range []string{"0", "-0", "12", "-12.50", "1e5", "1E+5", "0.5e-3", "01", "-", "1.", ".5", "1e", "+1", "--1", "1.e5", "00", "-01", "x"} {
		end, ok := SkipNumber([]byte(in), 0)
		if want := json.Valid([]byte(in)); (ok && end == len(in)) != want {
			t.Errorf("SkipNumber(%q) = %d, %v; valid JSON %v", in, end, ok, want)
		}
	}
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{{"42", 42, true}, {"-7", -7, true}, {"0", 0, true}, {"999999999999999999", 999999999999999999, true},
		{"1000000000000000000", 0, false}, {"1.5", 0, false}, {"-", 0, false}, {"", 0, false}, {"1e2", 0, false}} {
		if v, ok := PlainInt([]byte(c.in)); v != c.want || ok != c.ok {
			t.Errorf("PlainInt(%q) = %d, %v; want %d, %v", c.in, v, ok, c.want, c.ok)
		}
	}
}
