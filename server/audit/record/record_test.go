package record

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Every string of a record is cut on a character's boundary, the error
// that quotes a name as much as the name.
func TestAuditRecordClip(t *testing.T) {
	long := strings.Repeat("é", maxText) // two bytes each
	r := Record{Session: long, Group: "g", Tool: long, URI: long, Prompt: long, Rule: long, Error: "Tool not found: " + long}
	r.Clip()
	for _, s := range []string{r.Session, r.Tool, r.URI, r.Prompt, r.Rule, r.Error} {
		if !utf8.ValidString(s) || !strings.HasSuffix(s, ClippedMark) || len(s) > maxText+len(ClippedMark) {
			t.Errorf("clipped to %d bytes: %.40q...", len(s), s)
		}
	}
	if r.Group != "g" || !r.Clipped {
		t.Errorf("group %q, clipped %v", r.Group, r.Clipped)
	}
}
