package upstream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Group is a configured group with its servers, in config order.
type Group struct {
	Config  *config.Group
	Servers []*Server
}

// Manager owns every upstream server of a config.
type Manager struct {
	Config *config.Config
	Groups []*Group // config order

	logger  *slog.Logger
	changes chan struct{} // coalesced: one pending signal is enough

	cancel    context.CancelFunc
	closeOnce sync.Once
}

// New builds the manager of cfg's servers without starting any.
func New(cfg *config.Config, logger *slog.Logger) *Manager {
	m := &Manager{Config: cfg, logger: logger, changes: make(chan struct{}, 1)}
	for _, g := range cfg.Groups {
		group := &Group{Config: g}
		for _, sc := range g.Servers {
			group.Servers = append(group.Servers, newServer(sc, cfg.Settings, logger, m.signal))
		}
		m.Groups = append(m.Groups, group)
	}
	return m
}

// Start connects to every enabled server in parallel and returns at once;
// each server's outcome arrives on Changes.
func (m *Manager) Start(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(ctx)
	for _, g := range m.Groups {
		for _, s := range g.Servers {
			if s.Config.Disabled {
				continue
			}
			s.start(ctx)
		}
	}
}

// Changes receives a value after any server's state or lists changed.
// Signals coalesce: one receive may stand for several changes.
func (m *Manager) Changes() <-chan struct{} { return m.changes }

func (m *Manager) signal() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Servers lists every server of every group, in config order.
func (m *Manager) Servers() []*Server {
	var out []*Server
	for _, g := range m.Groups {
		out = append(out, g.Servers...)
	}
	return out
}

// Settled reports whether no server is still starting.
func (m *Manager) Settled() bool {
	for _, s := range m.Servers() {
		if s.Status().State == StateStarting && !s.Config.Disabled {
			return false
		}
	}
	return true
}

// WaitSettled waits until no server is still starting, or ctx ends.
func (m *Manager) WaitSettled(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !m.Settled() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops every server, in parallel, and waits for them.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		if m.cancel != nil {
			m.cancel()
		}
		var wg sync.WaitGroup
		for _, s := range m.Servers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.close()
			}()
		}
		wg.Wait()
	})
	return nil
}
