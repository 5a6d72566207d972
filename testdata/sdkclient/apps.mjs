// apps.mjs is an MCP Apps host built from the official libraries, driving
// the hub over stdio: the TypeScript SDK v2 client, the ext-apps AppBridge
// (the host side of a view) and the ext-apps App (the view's own side, the
// library the example's HTML runs), joined by an in-memory transport where
// a browser host joins them by postMessage. It finds the tool with a view,
// reads the view, and has the App call the server's tool through the
// bridge, as the example's "Get Server Time" button does.
//
// node apps.mjs --hub BIN --config FILE --group G --html FILE [--cold]
// prints one JSON line per check (see sdk.mjs) and exits 1 when one failed.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { check, exitWithChecks, report } from "./sdk.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "..", "npm-test", "node_modules");
const { values: opt } = parseArgs({
  options: { hub: { type: "string" }, config: { type: "string" }, group: { type: "string" }, html: { type: "string" }, cold: { type: "boolean" } },
});
const load = (p) => import(path.join(modules, p));
const { Client, InMemoryTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");
const { StdioClientTransport } = await load("@modelcontextprotocol/client/dist/stdio.mjs");
const { AppBridge, getToolUiResourceUri, RESOURCE_MIME_TYPE } = await load("@modelcontextprotocol/ext-apps/dist/src/app-bridge.js");
const { App } = await load("@modelcontextprotocol/ext-apps/dist/src/app.js");

const client = new Client(
  { name: "apps-host", version: "1.0.0" },
  { capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
);
await client.connect(new StdioClientTransport({ command: opt.hub, args: ["serve", "--standalone", "-c", opt.config], stderr: "inherit" }));

// The hub declares the extension where an upstream behind the view offers
// it, as far as it knows at the handshake: on a cold start (--cold) the
// example server is still starting and has no last run to tell by.
const ext = client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/ui"];
if (ext === undefined && opt.cold) {
  report("extension declared", { skip: "cold start: the upstream's tools are not known yet" });
} else {
  await check("extension declared", async () => ({ ok: ext !== undefined, extension: ext }));
}

// A dynamic view lists a group's exposed tools once the group is up, and
// says so by tools/list_changed: a host lists again then.
let changed;
const listChanged = () => new Promise((resolve) => (changed = resolve));
client.setNotificationHandler("notifications/tools/list_changed", () => changed?.());

let tool, uri;
await check("tool names its view", async () => {
  let next = listChanged();
  let { tools } = await client.listTools();
  for (let tries = 0; !tools.some((t) => getToolUiResourceUri(t)) && tries < 5; tries++) {
    await Promise.race([next, new Promise((r) => setTimeout(r, 60000))]);
    next = listChanged();
    ({ tools } = await client.listTools());
  }
  tool = tools.find((t) => getToolUiResourceUri(t));
  uri = tool && getToolUiResourceUri(tool);
  return { ok: !!uri && uri.startsWith(`ui://${opt.group}/`), tool: tool?.name, uri, tools: tools.map((t) => t.name) };
});

await check("view read unchanged", async () => {
  const res = await client.readResource({ uri });
  const c = res.contents[0];
  const html = fs.readFileSync(opt.html, "utf8");
  return { ok: res.contents.length === 1 && c.uri === uri && c.mimeType === RESOURCE_MIME_TYPE && c.text === html, uri: c.uri, mimeType: c.mimeType, bytes: c.text?.length, want: html.length };
});

await check("view calls its server's tool", async () => {
  const bridge = new AppBridge(client, { name: "apps-host", version: "1.0.0" }, { serverTools: {}, serverResources: {}, logging: {} });
  const [hostSide, viewSide] = InMemoryTransport.createLinkedPair();
  const app = new App({ name: "view", version: "1.0.0" }, {}, { autoResize: false });
  await bridge.connect(hostSide);
  await app.connect(viewSide);
  const res = await app.callServerTool({ name: "get-time", arguments: {} });
  const time = res.structuredContent?.time;
  const read = await app.request({ method: "resources/read", params: { uri } }, undefined).catch((e) => ({ error: String(e) }));
  await app.close();
  await bridge.close();
  return { ok: !res.isError && typeof time === "string" && !Number.isNaN(Date.parse(time)), time, isError: res.isError, viewRead: read?.contents?.[0]?.mimeType ?? read?.error };
});

await client.close();
exitWithChecks();
