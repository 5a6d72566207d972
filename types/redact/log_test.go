package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// Every part of a record that can hold text is written with the secrets
// of the moment redacted: the message, string and error attributes, in
// groups and in attributes given beforehand; a swapped set of secrets
// counts from the next record.
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	var cur atomic.Pointer[Secrets]
	cur.Store(NewSecrets(map[string]string{"K": "sk-value-1"}))
	log := slog.New(NewLogHandler(slog.NewTextHandler(&buf, nil), cur.Load)).With("given", "a sk-value-1")
	log.Info("msg sk-value-1", "s", "sk-value-1", "err", errors.New("quoted sk-value-1"), slog.Group("g", "in", "sk-value-1"))
	if out := buf.String(); strings.Contains(out, "sk-value-1") || strings.Count(out, "[secret:K]") != 5 {
		t.Fatalf("logged %s", out)
	}
	buf.Reset()
	cur.Store(NewSecrets(map[string]string{"L": "sk-other-2"}))
	log.Info("now sk-other-2 and sk-value-1")
	if out := buf.String(); !strings.Contains(out, "now [secret:L] and sk-value-1") {
		t.Fatalf("after the swap: %s", out)
	}
}
