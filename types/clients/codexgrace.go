package clients

import (
	"bytes"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Codex (0.147 and later) builds the tool list of a turn's first model
// request waiting at most mcp_optional_startup_grace_ms (1 s by default)
// for an MCP server still starting (spawned, initialize and tools/list
// answered), then sends the request without that server's tools, and
// lists them no more in that turn: it ignores tools/list_changed. The
// hub holds the handshake of a client shown flat mode until a server it
// never ran has listed its tools (up to startup_wait), which takes the
// server's own start, seconds for a node server; and the hub's own start
// may pass a second on a busy machine. At 0 Codex waits for each server
// as long as its startup_timeout_sec, which the hub's handshake keeps
// under (startup_wait). The key is top-level, Codex-wide, but install
// leaves the hub as Codex's one server.

// CodexStartupGrace is the top-level setting install writes into Codex's
// config.toml, unless the file sets the key already.
const CodexStartupGrace = codexGraceKey + " = 0"

const codexGraceKey = "mcp_optional_startup_grace_ms"

// codexGrace is the line install puts at the top of the file, and
// restore takes out again where it finds it as it was written: the
// comment tells it from a line of the user's own.
const codexGrace = CodexStartupGrace + " # dynamic-mcp install: Codex's first turn waits for its MCP servers to start\n"

// withGrace is data with codexGrace at its top, before every table,
// unless data sets the key already (the user's value stays); eol ends
// the lines it adds.
func withGrace(data []byte, eol string) []byte {
	var top map[string]any
	if toml.Unmarshal(data, &top) == nil {
		if _, ok := top[codexGraceKey]; ok {
			return data
		}
	}
	out := inLineEnd([]byte(codexGrace), eol)
	if len(bytes.TrimSpace(data)) > 0 {
		out = append(out, eol...)
	}
	return append(out, data...)
}

// withoutGrace is data without the codexGrace line install wrote, with
// either line ending, and a blank line after it; a line the user changed
// stays.
func withoutGrace(data []byte) []byte {
	line := []byte(strings.TrimSuffix(codexGrace, "\n"))
	i := bytes.Index(data, line)
	if i < 0 || i > 0 && data[i-1] != '\n' {
		return data
	}
	end := i + len(line)
	n := lineBreak(data[end:])
	if n == 0 && end < len(data) {
		return data // the line goes on: the user's
	}
	end += n
	end += lineBreak(data[end:])
	return append(data[:i:i], data[end:]...)
}

// WroteCodexGrace reports whether data, a Codex config.toml, holds the
// CodexStartupGrace line install writes (not one of the user's own).
func WroteCodexGrace(data []byte) bool {
	_, data = cutBOM(data)
	return len(withoutGrace(data)) != len(data)
}
