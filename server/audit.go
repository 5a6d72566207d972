package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	Outcome    string          `json:"outcome"` // a traffic.Status: ok, tool_error, error, blocked, not_found, cancelled
	Error      string          `json:"error,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// auditLog appends records to a JSON-lines file, one write per line and
// no buffering, so a crash loses at most the line being written. A reload
// that moves the trail retires it: it is closed once the requests that
// hold it (see Hub.acquire) are done, so none of their records is lost.
type auditLog struct {
	args   bool // keep argument values
	logger *slog.Logger

	mu     sync.Mutex // serialises writes; guards f and closed
	f      *os.File
	closed bool

	// Holding is apart from writing, so that a request that only holds
	// the trail (every request does) never waits behind a disk write.
	holdMu  sync.Mutex // guards users and retired
	users   int        // requests holding the trail
	retired bool       // no new holders; closed when users reaches 0
}

// openAudit opens the trail at path (nil when path is "": off).
func openAudit(path string, args bool, logger *slog.Logger) (*auditLog, error) {
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
	return &auditLog{f: f, args: args, logger: logger}, nil
}

// errAuditClosed is a write to a trail after it was closed, which holding
// it prevents.
var errAuditClosed = errors.New("audit trail: write after close")

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
	if a.closed {
		return errAuditClosed
	}
	_, err = a.f.Write(append(b, '\n'))
	return err
}

// hold keeps the trail open for one more writer, until release. It
// reports false when the trail was retired: the writer must take the
// current one instead. A nil trail (off) is always held.
func (a *auditLog) hold() bool {
	if a == nil {
		return true
	}
	a.holdMu.Lock()
	defer a.holdMu.Unlock()
	if a.retired {
		return false
	}
	a.users++
	return true
}

// release ends a hold; the last one closes a retired trail.
func (a *auditLog) release() {
	if a == nil {
		return
	}
	a.holdMu.Lock()
	a.users--
	last := a.retired && a.users == 0
	a.holdMu.Unlock()
	if last {
		if err := a.close(); err != nil {
			a.logger.Error("close the audit trail", "err", err)
		}
	}
}

// retire takes no new holders and closes the trail now, or when the last
// holder releases it.
func (a *auditLog) retire() error {
	if a == nil {
		return nil
	}
	a.holdMu.Lock()
	a.retired = true
	held := a.users > 0
	a.holdMu.Unlock()
	if held {
		return nil
	}
	return a.close()
}

func (a *auditLog) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	return a.f.Close()
}
