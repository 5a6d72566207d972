package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},  // é is two bytes: not split
		{"a€b", 3, "a"}, // € is three bytes
		{"a€b", 4, "a€"},
		{"😀😀", 5, "😀"},
		{"\xff\xfe", 1, "\xff"}, // invalid bytes are each their own start
	} {
		if got := String(c.s, c.max); got != c.want {
			t.Errorf("String(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
		}
	}
	long := strings.Repeat("ж", 100)
	for max := 0; max < len(long); max++ {
		got := String(long, max)
		if len(got) > max || !utf8.ValidString(got) || len(got) < max-1 {
			t.Fatalf("String(ж*100, %d) = %d bytes, valid %v", max, len(got), utf8.ValidString(got))
		}
	}
}

func TestMarked(t *testing.T) {
	if got := Marked("abc", 3, "…"); got != "abc" {
		t.Errorf("a string that fits was marked: %q", got)
	}
	if got := Marked("aéé", 2, "…"); got != "a…" {
		t.Errorf("Marked = %q", got)
	}
}

// A cut string shares no byte with the one it was cut from, so that
// keeping it does not keep the whole (a 4 MiB URI behind a 1 KiB span
// attribute).
func TestStringCutIsACopy(t *testing.T) {
	s := strings.Repeat("u", 4<<20)
	got := String(s, 1<<10)
	if len(got) != 1<<10 {
		t.Fatalf("len %d", len(got))
	}
	start, end := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(s)))+uintptr(len(s))
	if p := uintptr(unsafe.Pointer(unsafe.StringData(got))); p >= start && p < end {
		t.Error("the cut string points into the original: it keeps all 4 MiB alive")
	}
}

func TestEcho(t *testing.T) {
	if got := Echo("2025-06-18"); got != "2025-06-18" {
		t.Errorf("a short string was cut: %q", got)
	}
	got := Echo(strings.Repeat("v", 64<<10))
	if len(got) != EchoMax+len(EchoMark) || !strings.HasSuffix(got, EchoMark) {
		t.Errorf("Echo of 64 KiB = %d bytes: %.40q", len(got), got)
	}
}
