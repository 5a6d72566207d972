#!/usr/bin/env node
// shared.mjs is one client of the official TypeScript SDK
// (@modelcontextprotocol/sdk, installed by `npm install --prefix testdata/npm-test`)
// that starts its server as a client does (StdioClientTransport) and does
// what a Go test tells it, one JSON line at a time on stdin:
//
//   {"op": "setLevel", "level": "warning"}  (forgets the log messages so far)
//   {"op": "call", "name": "fake__echo", "arguments": {...}}
//   {"op": "seen"}     the log messages and server->client requests so far
//
// Each answer is one JSON line on stdout: {"ok": true, "result": ...} or
// {"ok": false, "error": "..."}. The client answers roots/list with its own
// root (file:///clients/<name>) and a form elicitation with its own name, so
// a test sees whose answer an upstream got. It exits when stdin closes.
//
//   node shared.mjs --name alpha --server '["dynamic-mcp", "serve", "-c", "hub.yaml"]'

import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { patience } from "./sdk.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    name: { type: "string" },
    server: { type: "string" },
    sdk: { type: "string", default: path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol", "sdk") },
  },
});
if (!opt.name || !opt.server) {
  process.stderr.write("shared.mjs: --name and --server are required\n");
  process.exit(2);
}
const argv = JSON.parse(opt.server);

const esm = path.join(opt.sdk, "dist", "esm");
const load = (p) => import(pathToFileURL(path.join(esm, p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const types = await load("types.js");

const client = new Client({ name: opt.name, version: "1.0.0" }, {
  capabilities: { elicitation: { form: {} }, roots: { listChanged: true } },
});
const seen = { logs: [], requests: [] };
client.setRequestHandler(types.ListRootsRequestSchema, async () => {
  seen.requests.push("roots/list");
  return { roots: [{ uri: `file:///clients/${opt.name}`, name: `${opt.name}'s project` }] };
});
client.setRequestHandler(types.ElicitRequestSchema, async () => {
  seen.requests.push("elicitation/create");
  return { action: "accept", content: { name: `${opt.name} answering`, check: true } };
});
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => {
  seen.logs.push({ level: n.params.level, logger: n.params.logger, data: n.params.data });
});
client.onerror = (err) => process.stderr.write(`shared.mjs ${opt.name}: ${err?.message ?? err}\n`);

const opts = { timeout: Math.max(20_000, patience) };
const answer = (fields) => process.stdout.write(JSON.stringify(fields) + "\n");

try {
  await client.connect(new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: { ...process.env }, stderr: "inherit" }), opts);
  answer({ ok: true, result: { connected: true } });
} catch (err) {
  answer({ ok: false, error: `connect: ${err?.message ?? err}` });
  process.exit(1);
}

// One command at a time, in order: a test reads the answer before it
// sends the next.
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  try {
    const cmd = JSON.parse(line);
    switch (cmd.op) {
      case "setLevel":
        await client.setLoggingLevel(cmd.level, opts);
        seen.logs.length = 0;
        answer({ ok: true, result: {} });
        break;
      case "call":
        answer({ ok: true, result: await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, types.CallToolResultSchema, opts) });
        break;
      case "seen":
        answer({ ok: true, result: seen });
        break;
      default:
        answer({ ok: false, error: `unknown op ${cmd.op}` });
    }
  } catch (err) {
    answer({ ok: false, error: err instanceof types.McpError ? `MCP error ${err.code}: ${err.message}` : String(err?.message ?? err) });
  }
}
await client.close();
process.exit(0);
