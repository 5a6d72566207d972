package upstream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// procSlots caps the connections kept for owners (isolation: per-session)
// across all servers, settings.max_session_processes: each server's own
// cap (maxIsolated) times many servers would still start hundreds of
// processes for one client's sessions.
type procSlots struct {
	mu   sync.Mutex // guards max and used
	max  int
	used int
}

// take reserves a slot, or says why there is none.
func (p *procSlots) take() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used >= p.max {
		return fmt.Errorf("client sessions have %d connections of their own to servers already (settings.max_session_processes allows %d at once, all servers together); try again when one ends: %w",
			p.used, p.max, errUnavailable)
	}
	p.used++
	return nil
}

func (p *procSlots) give() {
	p.mu.Lock()
	p.used--
	p.mu.Unlock()
}

func (p *procSlots) setMax(n int) {
	if n <= 0 {
		n = config.DefaultMaxSessionProcesses
	}
	p.mu.Lock()
	p.max = n
	p.mu.Unlock()
}

// SessionProcesses is how many connections servers keep for client
// sessions now (isolation: per-session), all servers together.
func (m *Manager) SessionProcesses() int {
	m.procs.mu.Lock()
	defer m.procs.mu.Unlock()
	return m.procs.used
}

// applySessionSettings takes the per-session settings of cfg.
func (m *Manager) applySessionSettings(s config.Settings) {
	m.procs.setMax(s.MaxSessionProcesses)
	idle := s.SessionProcessIdle
	if idle <= 0 {
		idle = config.DefaultSessionProcessIdle
	}
	m.procIdle.Store(int64(idle))
}

// reapIdle closes, every so often until ctx ends, the owners' connections
// idle for settings.session_process_idle.
func (m *Manager) reapIdle(ctx context.Context) {
	for {
		idle := time.Duration(m.procIdle.Load())
		t := time.NewTimer(min(max(idle/4, time.Second), time.Minute))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		m.releaseIdle()
	}
}

// releaseIdle closes the owners' connections that had no request for
// settings.session_process_idle.
func (m *Manager) releaseIdle() {
	cutoff := m.now().Add(-time.Duration(m.procIdle.Load()))
	for _, s := range m.Servers() {
		s.releaseIdle(cutoff)
	}
}
