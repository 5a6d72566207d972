package clients

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Limits on a client config, checked before it is parsed: hujson and
// go-toml parse recursively, so a few megabytes of '[' would otherwise
// overflow the stack, and a huge file would take minutes and gigabytes.
const (
	// MaxFileSize is the largest client config read: 10 MiB, far above
	// any real one, as the hub's own message limit.
	MaxFileSize = jsonrpc.DefaultMaxMessageSize
	// MaxDepth is the deepest nesting of arrays, objects and tables
	// accepted: 128, the JSON-RPC depth limit of the hub.
	MaxDepth = jsonrpc.MaxDepth
)

var (
	// ErrTooLarge says a config is over MaxFileSize.
	ErrTooLarge = errors.New("file too large")
	// ErrTooDeep says a config nests deeper than MaxDepth.
	ErrTooDeep = errors.New("nested too deeply")
)

// ReadFile reads a client config of at most MaxFileSize bytes, refusing a
// larger one before reading it whole.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w: over %d MiB, which no MCP client config needs; nothing was read", path, ErrTooLarge, MaxFileSize>>20)
	}
	return b, nil
}

// checkLimits refuses data over MaxFileSize or nested deeper than
// MaxDepth, before any parser sees it.
func checkLimits(data []byte, isTOML bool) error {
	if len(data) > MaxFileSize {
		return fmt.Errorf("%w: over %d MiB, which no MCP client config needs", ErrTooLarge, MaxFileSize>>20)
	}
	depth := jsonDepth
	if isTOML {
		depth = tomlDepth
	}
	if line, ok := depth(data); !ok {
		return fmt.Errorf("%w: more than %d levels of [ and { (line %d)", ErrTooDeep, MaxDepth, line)
	}
	return nil
}

// jsonDepth scans JSON with comments (hujson's input) for nesting deeper
// than MaxDepth, skipping strings and comments. It returns false and the
// line where the limit is passed.
func jsonDepth(data []byte) (int, bool) {
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				switch data[i] {
				case '\\':
					i++
				case '\n':
					line++
				}
			}
		case '/':
			switch {
			case i+1 < len(data) && data[i+1] == '/':
				for i < len(data) && data[i] != '\n' {
					i++
				}
				line++
			case i+1 < len(data) && data[i+1] == '*':
				for i += 2; i+1 < len(data) && (data[i] != '*' || data[i+1] != '/'); i++ {
					if data[i] == '\n' {
						line++
					}
				}
				i++
			}
		case '[', '{':
			if depth++; depth > MaxDepth {
				return line, false
			}
		case ']', '}':
			depth--
		}
	}
	return line, true
}

// tomlDepth is jsonDepth for TOML: basic and literal strings, their
// multi-line forms, and # comments are skipped.
func tomlDepth(data []byte) (int, bool) {
	depth, line := 0, 1
	has := func(i int, s string) bool { return i+len(s) <= len(data) && string(data[i:i+len(s)]) == s }
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '\n':
			line++
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			line++
		case has(i, `"""`) || has(i, `'''`):
			q := string(data[i : i+3])
			for i += 3; i < len(data) && !has(i, q); i++ {
				switch {
				case data[i] == '\\' && q == `"""`:
					i++
				case data[i] == '\n':
					line++
				}
			}
			i += 2
		case c == '"':
			for i++; i < len(data) && data[i] != '"' && data[i] != '\n'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '\'':
			for i++; i < len(data) && data[i] != '\'' && data[i] != '\n'; i++ {
			}
		case c == '[' || c == '{':
			if depth++; depth > MaxDepth {
				return line, false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return line, true
}
