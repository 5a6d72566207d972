#!/usr/bin/env node
// firstlist.mjs is the official TypeScript SDK client, as a client that
// lists once does: it connects, sends one tools/list, and prints
// {"tools": [names]} as one JSON line. --sdk v1 is
// @modelcontextprotocol/sdk, v2 @modelcontextprotocol/client (both
// installed by `npm install --prefix testdata/npm-test`), each in its default
// era and with its default request timeout (60 s): the test checks that
// the hub answers inside it.
//
//   node firstlist.mjs --sdk v1|v2 (--hub '["cmd","arg"...]' | --url URL [--token T])

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: { sdk: { type: "string", default: "v1" }, hub: { type: "string" }, url: { type: "string" }, token: { type: "string" } },
});
if (!opt.hub === !opt.url) {
  process.stderr.write("usage: firstlist.mjs --sdk v1|v2 (--hub JSON | --url URL [--token T])\n");
  process.exit(2);
}
const modules = path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol");
const load = (...p) => import(pathToFileURL(path.join(modules, ...p)).href);
let Client, StdioClientTransport, StreamableHTTPClientTransport;
if (opt.sdk === "v2") {
  ({ Client, StreamableHTTPClientTransport } = await load("client", "dist", "index.mjs"));
  ({ StdioClientTransport } = await load("client", "dist", "stdio.mjs"));
} else {
  ({ Client } = await load("sdk", "dist", "esm", "client", "index.js"));
  ({ StdioClientTransport } = await load("sdk", "dist", "esm", "client", "stdio.js"));
  ({ StreamableHTTPClientTransport } = await load("sdk", "dist", "esm", "client", "streamableHttp.js"));
}

const client = new Client({ name: `firstlist-${opt.sdk}`, version: "1.0.0" });
let transport;
if (opt.hub) {
  const argv = JSON.parse(opt.hub);
  // The hub inherits this environment whole (the SDK passes a few
  // variables only by default).
  transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: { ...process.env }, stderr: "inherit" });
} else {
  const headers = opt.token ? { Authorization: `Bearer ${opt.token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers } });
}
try {
  await client.connect(transport);
  const { tools } = await client.listTools();

  process.stdout.write(JSON.stringify({ tools: tools.map((t) => t.name) }) + "\n");
  await client.close();
  process.exit(0);
} catch (err) {
  process.stderr.write(`firstlist.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
}
