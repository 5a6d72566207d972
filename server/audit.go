package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// auditRecord is one line of the audit trail.
type auditRecord struct {
	Time       time.Time       `json:"time"`
	Session    string          `json:"session"`
	Group      string          `json:"group,omitempty"`
	Server     string          `json:"server,omitempty"`
	Method     string          `json:"method"`
	Tool       string          `json:"tool,omitempty"`
	URI        string          `json:"uri,omitempty"`
	Prompt     string          `json:"prompt,omitempty"`
	Decision   string          `json:"decision"` // allow, deny, log, prompt (answered), not_found
	Rule       string          `json:"rule,omitempty"`
	DurationMS float64         `json:"duration_ms"`
	Outcome    string          `json:"outcome"` // ok, tool_error, error, blocked, not_found
	Error      string          `json:"error,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// auditLog appends records to a JSON-lines file, one write per line and
// no buffering, so a crash loses at most the line being written.
type auditLog struct {
	mu   sync.Mutex // serialises writes
	f    *os.File
	args bool // keep argument values
}

// openAudit opens the trail at path (nil when path is "": off).
func openAudit(path string, args bool) (*auditLog, error) {
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit trail: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit trail: %w", err)
	}
	return &auditLog{f: f, args: args}, nil
}

func (a *auditLog) write(r auditRecord) error {
	if a == nil {
		return nil
	}
	if !a.args {
		r.Arguments = nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.f.Write(append(b, '\n'))
	return err
}

func (a *auditLog) close() error {
	if a == nil {
		return nil
	}
	return a.f.Close()
}
