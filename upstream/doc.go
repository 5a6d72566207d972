// Package upstream keeps one supervised MCP client per configured server,
// organised in groups: it connects (a jsonrpc.Conn over the child's pipes
// or an HTTP stream of package transport), negotiates, caches every page of the
// server's tool, prompt, resource and template lists as raw JSON (mcp-go's
// typed structs drop fields a hub must pass through), forwards raw requests,
// and reports every change of state or lists on one coalescing channel
// (Changes) and what servers send on their own initiative on another,
// bounded one (Events), whose reader marks each event Routed: a call waits
// for the events its server sent before the call's result, and for
// nothing else. Manager.Close returns when every goroutine it started has
// ended; pin files are read and written with no lock a call takes.
package upstream
