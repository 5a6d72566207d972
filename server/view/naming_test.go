package view

import (
	"strings"
	"testing"
)

func TestExposedName(t *testing.T) {
	if got := ExposedName("files", "read", true); got != "files__read" {
		t.Errorf("prefixed: %q", got)
	}
	if got := ExposedName("files", "read", false); got != "read" {
		t.Errorf("unprefixed: %q", got)
	}
	long := strings.Repeat("x", 130)
	a, b := ExposedName("g", long+"a", true), ExposedName("g", long+"b", true)
	if len(a) != maxNameLen || len(b) != maxNameLen {
		t.Errorf("shortened names are %d and %d long", len(a), len(b))
	}
	if a == b {
		t.Errorf("two long names shortened to the same %q", a)
	}
	if a != ExposedName("g", long+"a", true) {
		t.Error("shortening is not stable")
	}
}
