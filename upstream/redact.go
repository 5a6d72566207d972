package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// RedactError is err as a client, an observer or the inspector may read
// it: every resolved ${secret:NAME} of cfg in its text replaced by
// config.RedactSecrets, the redactor of the hub's own log. An error that
// names no secret is err itself. A JSON-RPC error (an upstream's answer)
// becomes one of the same code with its message and data redacted;
// any other keeps what callers branch on (errors.Is of its sentinels,
// errors.As of a child's exit, its stderr lines redacted) and no more.
func RedactError(cfg *config.Config, err error) error {
	if err == nil {
		return nil
	}
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		out := &jsonrpc.Error{Code: e.Code, Message: cfg.RedactText(e.Message), Data: e.Data}
		if b, mErr := json.Marshal(e.Data); mErr == nil && e.Data != nil {
			if r := cfg.RedactSecrets(b); !bytes.Equal(r, b) {
				out.Data = json.RawMessage(r)
			}
		}
		if out.Message == e.Message && fmt.Sprint(out.Data) == fmt.Sprint(e.Data) {
			return err
		}
		return out
	}
	if text := cfg.RedactText(err.Error()); text != err.Error() {
		return &redactedError{text: text, err: err, cfg: cfg}
	}
	return err
}

// redactedError is an error whose text named a secret. It does not unwrap
// to the original, whose text still does.
type redactedError struct {
	text string
	err  error // the original: asked for its sentinels, never for its text
	cfg  *config.Config
}

func (r *redactedError) Error() string { return r.text }

// Is reports whether the original error is target (a sentinel such as
// errUnavailable): a comparison that reveals no text.
func (r *redactedError) Is(target error) bool { return errors.Is(r.err, target) }

// As finds a child's exit in the original error, its lines redacted (the
// inspector shows them one by one).
func (r *redactedError) As(target any) bool {
	t, ok := target.(**transport.ExitError)
	var exit *transport.ExitError
	if !ok || !errors.As(r.err, &exit) {
		return false
	}
	red := &transport.ExitError{Status: r.cfg.RedactText(exit.Status), Stderr: make([]string, len(exit.Stderr))}
	for i, line := range exit.Stderr {
		red.Stderr[i] = r.cfg.RedactText(line)
	}
	*t = red
	return true
}

// redact is err redacted with the secrets of the manager's config now.
func (m *Manager) redact(err error) error {
	return RedactError(m.cfg.Load(), err)
}
