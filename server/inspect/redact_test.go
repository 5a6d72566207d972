package inspect

import (
	"strings"
	"testing"
)

// keep cuts a body at the cap, and what is shown of it says so and is
// redacted.
func TestKeepCutsAndRedacts(t *testing.T) {
	in := []byte(`{"api_key":"` + strings.Repeat("s", 100) + `","text":"` + strings.Repeat("x", 100) + `"}`)
	b := keep(in, 50).shown()
	if !b.Truncated || b.Size != len(in) || strings.Contains(b.Text, "sss") || b.Text != `{"api_key":"[redacted]"` {
		t.Errorf("kept %+v", b)
	}
	if b := keep(nil, 50); !b.IsZero() {
		t.Errorf("nothing kept as %+v", b)
	}
	if b := keep([]byte(`{"a":1}`), 50).shown(); b.Truncated || b.Text != `{"a":1}` {
		t.Errorf("kept %+v", b)
	}
}

// A body full of short secrets grows as they are redacted, yet what is
// kept stays within the cap.
func TestKeepCapsWhatRedactionAdds(t *testing.T) {
	in := []byte("[" + strings.Repeat(`{"token":1},`, 1000) + "0]")
	b := keep(in, len(in)).shown()
	if len(b.Text) > len(in) || !b.Truncated || strings.Contains(b.Text, `"token":1`) {
		t.Errorf("kept %d bytes of %d (truncated %v)", len(b.Text), len(in), b.Truncated)
	}
}

// keepBoth keeps what keep keeps of each, cut at max, in one buffer.
func TestKeepBothIsKeepOfEach(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{`{"a":1}`, `{"content":[]}`}, {"", `{"b":2}`}, {`{"a":1}`, ""}, {`{"long":"0123456789"}`, `{"x":"0123456789abc"}`}} {
		for _, max := range []int{5, 1000} {
			a, b := keepBoth([]byte(tc.a), []byte(tc.b), max)
			if a.shown() != keep([]byte(tc.a), max).shown() || b.shown() != keep([]byte(tc.b), max).shown() {
				t.Errorf("%q, %q, max %d: %+v, %+v", tc.a, tc.b, max, a.shown(), b.shown())
			}
		}
	}
}
