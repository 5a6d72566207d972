package mcphttp

import (
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// This file is Streamable HTTP as 2026-07-28 has it (basic/transports/
// streamable-http): no sessions, the request's version, method and name
// mirrored in headers that must agree with the body, and errors that say
// what they are in the HTTP status too. Both eras are served on /mcp at
// once; each request's era is its own.

// headerProtocolVersion is the protocol version header of every request
// after the legacy handshake, and of every 2026-07-28 request.
const headerProtocolVersion = mcp.HeaderProtocolVersion

// modernRequest reports whether a POSTed request is of 2026-07-28 or
// later: its _meta or its MCP-Protocol-Version header says so (a request
// where only one does is refused by checkHeaders).
func modernRequest(r *http.Request, msg *jsonrpc.Message) bool {
	return server.Stateless(msg) || (msg.IsRequest() && mcp.IsModernProtocol(r.Header.Get(headerProtocolVersion)))
}

// checkHeaders refuses a 2026-07-28 request whose headers do not mirror
// its body ("Server Validation"): MCP-Protocol-Version missing or not the
// version of its _meta, Mcp-Method missing or not its method, Mcp-Name
// missing or not its name or URI (Base64 sentinel decoded) where the
// method has one, all HeaderMismatch (-32020); a _meta without a version,
// where only the header names one, is invalid params (-32602). Either
// way the status is 400. nil lets it through: whether the hub serves the
// version is the hub's to answer.
func checkHeaders(h http.Header, msg *jsonrpc.Message) *jsonrpc.Error {
	header, meta := h.Get(headerProtocolVersion), server.ProtocolVersion(msg)
	switch {
	case header == "":
		return jsonrpc.Errorf(mcp.HEADER_MISMATCH, "Header mismatch: the "+headerProtocolVersion+" header is required with "+mcp.MetaKeyProtocolVersion)
	case meta == "":
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: _meta lacks "+mcp.MetaKeyProtocolVersion)
	case header != meta:
		return jsonrpc.Errorf(mcp.HEADER_MISMATCH, "Header mismatch: "+headerProtocolVersion+" header "+clip.Echo(header)+" does not match "+mcp.MetaKeyProtocolVersion+" "+clip.Echo(meta))
	}
	if err := mcp.ValidateStandardHeaders(h.Get, meta, mcp.MCPMethod(msg.Method), msg.Params); err != nil {
		return jsonrpc.Errorf(mcp.HEADER_MISMATCH, "Header mismatch: "+clip.EchoText(err.Error())) // quotes the method and name, of the body and of the headers
	}
	return nil
}

// modernStatus is the HTTP status of a 2026-07-28 answer: what its error
// code maps to (404 for a method not found, 400 for a request the server
// refuses as malformed, unsupported or mismatched), 200 for a result and
// for every other error (a tool's, an upstream's).
func modernStatus(answer []byte) int {
	o, err := jsonrpc.ScanObject(answer)
	if err != nil {
		return http.StatusOK
	}
	e, err := jsonrpc.ScanObject(o.Field("error"))
	if err != nil {
		return http.StatusOK
	}
	switch string(e.Field("code")) {
	case "-32601":
		return http.StatusNotFound
	case "-32020", "-32021", "-32022", "-32600", "-32602", "-32700":
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// refuseModernStream answers a GET or DELETE of a 2026-07-28 client: that
// version has neither (no session to end, subscriptions/listen instead of
// the GET stream), so 405 with the method it has.
func refuseModernStream(w http.ResponseWriter, r *http.Request) bool {
	if !mcp.IsModernProtocol(r.Header.Get(headerProtocolVersion)) {
		return false
	}
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, "Method Not Allowed: protocol version "+clip.Echo(r.Header.Get(headerProtocolVersion))+" has no "+r.Method+" on /mcp; listen with subscriptions/listen", http.StatusMethodNotAllowed)
	return true
}
