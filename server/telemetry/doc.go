// Package telemetry turns the hub's traffic (see package traffic) into
// Prometheus metrics and OpenTelemetry traces, both named after the
// OpenTelemetry semantic conventions for MCP (docs/gen-ai/mcp.md of
// open-telemetry/semantic-conventions-genai): mcp.server.operation.duration
// for what clients ask the hub, mcp.client.operation.duration for what the
// hub asks upstreams, a SERVER span per client request and a CLIENT span per
// hop to an upstream, with the W3C trace context carried in params._meta.
//
// Metrics and Tracer are each a traffic.Observer. They run on the request's
// goroutine, do no I/O there and keep no byte slice the hub lends them.
// Every label value comes from a bounded set (the config, the upstreams'
// lists, fixed words): nothing a client invents, such as a tool or method
// name that does not exist, becomes a label.
package telemetry
