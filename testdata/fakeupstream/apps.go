package fakeupstream

import "encoding/json"

// -apps offers an MCP App (ext-apps): the view tool whose _meta.ui names
// ui://dashboard/app.html (listed, with a _meta.ui of its own) and, in the
// deprecated flat key, ui://hidden/app.html (served, never listed, as
// ext-apps lets a server do). With -apps-declare the server also declares
// the io.modelcontextprotocol/ui extension, with those settings.
var (
	apps        = flags.Bool("apps", false, "offer an MCP App: the view tool and its ui:// resources")
	appsDeclare = flags.String("apps-declare", "", "declare the io.modelcontextprotocol/ui extension with these settings (a JSON object)")
)

// AppText is the HTML of the fake's ui:// resources as the JSON string it
// sends, written by hand as no encoder would: <, > and & as they are, an
// escape the server chose (\u00e9), a raw ☃ and a line break.
const AppText = `"<!DOCTYPE html><html><body><script>if (1 < 2 && \"x\" != '>') document.title = \"app & view\";</script>\n<p>\u00e9 ☃</p></body></html>"`

// AppUIMeta is the _meta.ui of the fake's ui:// resources.
const AppUIMeta = `{"csp":{"connectDomains":["https://api.example.com"],"resourceDomains":["https://cdn.example.com"]},"permissions":{"clipboardWrite":{}},"domain":"abc.example-content.com","prefersBorder":true}`

// appTools are the tools -apps adds.
func appTools() []any {
	if !*apps {
		return nil
	}
	name, _ := json.Marshal(toolName("view"))
	return []any{json.RawMessage(`{"name":` + string(name) + `,"description":"Show the dashboard","inputSchema":{"type":"object"},` +
		`"_meta":{"ui":{"resourceUri":"ui://dashboard/app.html","visibility":["model","app"]},"ui/resourceUri":"ui://hidden/app.html","x-other":"<kept>"}}`)}
}

// appResources are the resources -apps adds to the list.
func appResources() []any {
	if !*apps {
		return nil
	}
	return []any{json.RawMessage(`{"uri":"ui://dashboard/app.html","name":"dashboard","mimeType":"text/html;profile=mcp-app","_meta":{"ui":` + AppUIMeta + `}}`)}
}

// readApp answers a resources/read of a ui:// resource of -apps, and
// reports whether it was one.
func readApp(req request) bool {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(req.Params, &p)
	if !*apps || p.URI != "ui://dashboard/app.html" && p.URI != "ui://hidden/app.html" {
		return false
	}
	uri, _ := json.Marshal(p.URI)
	sendRaw(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"contents":[{"uri":` + string(uri) + `,"mimeType":"text/html;profile=mcp-app","text":` + AppText + `,"_meta":{"ui":` + AppUIMeta + `}}]}}`)
	return true
}

// declareApps adds the extension to caps, with -apps-declare.
func declareApps(caps map[string]any) {
	if *appsDeclare != "" {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/ui": json.RawMessage(*appsDeclare)}
	}
}
