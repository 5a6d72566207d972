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
//
// A client (see ClientOf) holds at most its share of the slots
// (http.client_share), so that one client's sessions cannot take every
// slot from the others.
type procSlots struct {
	mu       sync.Mutex // guards the fields below
	max      int
	share    float64
	used     int
	byClient map[string]int // slots of owners with a client, by client
}

// take reserves a slot for an owner of client ("" for none), or says why
// there is none.
func (p *procSlots) take(client string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used >= p.max {
		return fmt.Errorf("client sessions have %d connections of their own to servers already (settings.max_session_processes allows %d at once, all servers together); try again when one ends: %w",
			p.used, p.max, errUnavailable)
	}
	if client != "" {
		if limit := config.ShareOf(p.max, p.share); p.byClient[client] >= limit {
			return fmt.Errorf("this client's sessions have %d connections of their own to servers already, its share of settings.max_session_processes (%d of %d, http.client_share); try again when one ends: %w",
				p.byClient[client], limit, p.max, errUnavailable)
		}
		if p.byClient == nil {
			p.byClient = map[string]int{}
		}
		p.byClient[client]++
	}
	p.used++
	return nil
}

func (p *procSlots) give(client string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used--
	if client != "" {
		if p.byClient[client]--; p.byClient[client] <= 0 {
			delete(p.byClient, client)
		}
	}
}

func (p *procSlots) set(n int, share float64) {
	if n <= 0 {
		n = config.DefaultMaxSessionProcesses
	}
	p.mu.Lock()
	p.max, p.share = n, share
	p.mu.Unlock()
}

// shareOf is a client's share of limit; all of it for no client.
func (p *procSlots) shareOf(client string, limit int) int {
	if client == "" {
		return limit
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return config.ShareOf(limit, p.share)
}

// ClientOf is the client owner belongs to (Owner.Client), or "" for
// none.
func ClientOf(owner Owner) string {
	if owner == nil {
		return ""
	}
	return owner.Client()
}

// SessionProcesses is how many connections servers keep for client
// sessions now (isolation: per-session), all servers together.
func (m *Manager) SessionProcesses() int {
	m.procs.mu.Lock()
	defer m.procs.mu.Unlock()
	return m.procs.used
}

// applySessionSettings takes the per-session settings of cfg.
func (m *Manager) applySessionSettings(cfg *config.Config) {
	s := cfg.Settings
	m.procs.set(s.MaxSessionProcesses, cfg.HTTP.ClientShare)
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
