package routes

import "github.com/mark3labs/mcp-go/mcp"

// levels orders MCP's log levels (RFC 5424's, least severe first).
var levels = map[mcp.LoggingLevel]int{
	mcp.LoggingLevelDebug: 0, mcp.LoggingLevelInfo: 1, mcp.LoggingLevelNotice: 2, mcp.LoggingLevelWarning: 3,
	mcp.LoggingLevelError: 4, mcp.LoggingLevelCritical: 5, mcp.LoggingLevelAlert: 6, mcp.LoggingLevelEmergency: 7,
}

// Allows reports whether a client that set min wants a message at level.
func Allows(min, level mcp.LoggingLevel) bool { return levels[level] >= levels[min] }

// SetLogLevel asks upstreams to log at the most verbose level any client
// asked for; each client then gets only what its own level allows.
func (t *Table[S]) SetLogLevel() {
	var min mcp.LoggingLevel = mcp.LoggingLevelEmergency
	for _, sess := range t.List() {
		if l := sess.GetLogLevel(); levels[l] < levels[min] {
			min = l
		}
	}
	t.opts.Manager.SetLogLevel(min)
}
