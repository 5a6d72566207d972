package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"
)

// The values of --log-format.
const (
	logFormatAuto = "auto" // tint on a terminal, JSON otherwise
	logFormatJSON = "json" // one JSON object a line, slog's keys (time, level, msg)
	logFormatText = "text" // slog's key=value lines
)

// logFormatEnvVar sets --log-format's default, for a container or a
// service manager that sets the environment rather than the arguments.
const logFormatEnvVar = "DYNAMIC_MCP_LOG_FORMAT"

func defaultLogFormat() string {
	if f := os.Getenv(logFormatEnvVar); f != "" {
		return f
	}
	return logFormatAuto
}

// logHandler is the handler of logs on stderr in format (one of the
// checked values): where stderr is not a terminal (a container's log, a
// service manager's journal, a file) a collector reads it, so auto
// writes JSON there.
func logHandler(format string, stderr io.Writer, opts *slog.HandlerOptions) slog.Handler {
	switch format {
	case logFormatJSON:
		return slog.NewJSONHandler(stderr, opts)
	case logFormatText:
		return slog.NewTextHandler(stderr, opts)
	}
	if isTerminal(stderr) {
		return tint.NewTextHandler(stderr, &tint.Options{Level: opts.Level})
	}
	return slog.NewJSONHandler(stderr, opts)
}
