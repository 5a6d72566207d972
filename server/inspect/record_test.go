package inspect

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A kept body printed or logged is redacted like the page's.
func TestBodyPrintedRedacted(t *testing.T) {
	b := body{raw: []byte(`{"password":"hunter2"}`), whole: 22, max: 1 << 10}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("row", "body", b)
	for _, got := range []string{fmt.Sprint(b), fmt.Sprintf("%v", b), logged.String()} {
		if strings.Contains(got, "hunter2") || !strings.Contains(got, "redacted") {
			t.Errorf("printed: %s", got)
		}
	}
}
