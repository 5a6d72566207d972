package telemetry

import (
	"bytes"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// The W3C trace context travels in a request's params._meta, as the MCP
// semantic conventions recommend ("Context propagation"): the keys are
// the HTTP header names, traceparent and tracestate.

// metaCarrier reads the trace context from a raw _meta object.
type metaCarrier []byte

func (m metaCarrier) Get(key string) string { return stringField(json.RawMessage(m), key) }
func (metaCarrier) Set(string, string)      {}
func (metaCarrier) Keys() []string          { return nil }

// traceKeys are the members of _meta the hub sets on each hop.
var traceKeys = []string{"traceparent", "tracestate"}

// withTraceContext returns params with _meta's traceparent and tracestate
// set to carrier's (a tracestate carrier lacks is removed, for it belongs
// to another span), every other byte kept. Params without _meta get one.
func withTraceContext(params json.RawMessage, carrier propagation.MapCarrier) (json.RawMessage, error) {
	if carrier["traceparent"] == "" {
		return params, nil
	}
	if t := bytes.TrimSpace(params); len(t) == 0 || string(t) == "null" {
		params = json.RawMessage(`{}`)
	}
	meta := jsonrpc.Field(params, "_meta")
	if meta == nil {
		// The usual case, made without parsing: the values are the
		// propagator's, of characters that need no escaping.
		b, _ := jsonrpc.Marshal(map[string]string(carrier))
		return jsonrpc.SetField(params, "_meta", b)
	}
	var err error
	for _, k := range traceKeys {
		if v := carrier[k]; v != "" {
			q, _ := jsonrpc.Marshal(v)
			meta, err = jsonrpc.SetField(meta, k, q)
		} else if bytes.Contains(meta, []byte(`"`+k+`"`)) {
			meta, err = jsonrpc.DeleteField(meta, k)
		}
		if err != nil {
			return nil, err
		}
	}
	return jsonrpc.SetField(params, "_meta", meta)
}
