// Package redaction is the hop stage that keeps the secrets the config
// resolved (${secret:NAME}) from going further than the hop that met
// them: not to the client, nor to the observers (inspector, audit,
// traces), which see a hop's answer once it passed this stage.
package redaction

import (
	"context"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Stage redacts what a hop brings back.
//
// Results are redacted too, decided here for every hop: a tool that
// echoes its key, raw or in JSON-in-text at any depth
// (config.RedactSecrets), would otherwise hand it to the client's model;
// a value of six bytes or more is rare enough in a result by chance.
type Stage struct{}

// Hop sends h on and redacts its result and its error under h's config.
func (Stage) Hop(ctx context.Context, h *call.Hop, next call.HopHandler) (json.RawMessage, upstream.ConnID, error) {
	res, conn, err := next.Hop(ctx, h)
	if h.Secrets == nil { // the config resolves no secret
		return res, conn, err
	}
	return h.Secrets.Bytes(res), conn, upstream.RedactError(h.Config, err)
}
