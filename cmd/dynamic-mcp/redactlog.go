package main

import (
	"log/slog"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
)

// redactLogs wraps logger's handler so that the values of the config's
// ${secret:NAME} are written [secret:NAME] (redact.NewLogHandler); set
// swaps in a reloaded config.
func redactLogs(logger *slog.Logger, cfg *config.Config) (_ *slog.Logger, set func(*config.Config)) {
	p := new(atomic.Pointer[config.Config])
	p.Store(cfg)
	return slog.New(redact.NewLogHandler(logger.Handler(), func() *redact.Secrets { return p.Load().Secrets() })), p.Store
}
