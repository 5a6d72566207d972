package mcplocal

import (
	"context"
	"errors"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// socketCheck is how often the hub looks at its socket file: a file
// deleted or replaced (a cleanup of the directory, a user's mistake)
// would leave the hub running but out of reach of bridges and `stop`, and
// the next bridge would start a second hub beside it.
const socketCheck = 2 * time.Second

// keeper is a listener that can listen on its path again (local.Listen's).
type keeper interface {
	Keep() (relistened bool, err error)
}

// keepSocket keeps the socket's directory private and listens on the
// socket's path again, each socketCheck, when it no longer leads to the
// hub, until ctx is done. While another process answers there (another
// hub), this hub serves its clients until they leave, and stops when
// idle, or listens there again once the path is free.
func (s *Server) keepSocket(ctx context.Context, k keeper) {
	t := time.NewTicker(socketCheck)
	defer t.Stop()
	var said string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		relistened, err := k.Keep()
		switch {
		case relistened:
			s.logger.Warn("the hub's socket file was deleted or replaced: listening on it again")
			said = ""
		case err == nil:
			said = ""
		case err.Error() == said:
		case errors.Is(err, local.ErrRunning):
			s.logger.Warn("the hub's socket file was replaced, and another process answers there: this hub serves its clients until they leave, and listens there again once the path is free")
			said = err.Error()
		default:
			s.logger.Warn("the hub's socket file was deleted or replaced, and listening on it again failed: bridges cannot reach this hub", "err", err)
			said = err.Error()
		}
	}
}
