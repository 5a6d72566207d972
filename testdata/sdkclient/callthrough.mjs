#!/usr/bin/env node
// callthrough.mjs is the official TypeScript SDK client (@modelcontextprotocol/sdk,
// installed by `npm install --prefix testdata/npm-test`) starting the hub over
// stdio, as a desktop client does, and calling one tool through it: the
// client a conformance suite's client scenario runs, with the hub (and so
// its upstream client) in the middle.
//
//   node callthrough.mjs --hub '["dynamic-mcp","serve","-c","hub.yaml"]' --tool test_reconnection --want "completed"
//
// It waits (up to --timeout ms) until the hub lists --tool, calls it with
// no arguments, and prints a check line for each step; the exit status is
// 1 when the call failed or its text lacks --want, 2 on a usage error.

import path from "node:path";
import { pathToFileURL } from "node:url";
import { check, exitWithChecks, openSDK, patience } from "./sdk.mjs";

const { opt, Client } = await openSDK(
  "callthrough.mjs",
  {
    hub: { type: "string" },
    tool: { type: "string" },
    want: { type: "string", default: "" },
    timeout: { type: "string", default: String(Math.max(20000, patience)) },
  },
  ["hub", "tool"],
);
const { StdioClientTransport } = await import(pathToFileURL(path.join(opt.sdk, "dist", "esm", "client", "stdio.js")).href);
const argv = JSON.parse(opt.hub);
const timeout = Number(opt.timeout);
const client = new Client({ name: "callthrough.mjs", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: { ...process.env }, stderr: "inherit" }));

const listed = await check("tools/list", async () => {
  for (const deadline = Date.now() + timeout; ; await new Promise((r) => setTimeout(r, 100))) {
    const { tools } = await client.listTools();
    if (tools.some((t) => t.name === opt.tool)) return { tools: tools.length };
    if (Date.now() > deadline) throw new Error(`${opt.tool} not listed: ${tools.map((t) => t.name).join(", ")}`);
  }
});
if (listed) {
  await check("tools/call", async () => {
    const res = await client.callTool({ name: opt.tool, arguments: {} }, undefined, { timeout });
    const text = (res.content ?? []).map((c) => c.text ?? "").join("");
    if (res.isError || !text.includes(opt.want)) throw new Error(`answered ${JSON.stringify(res)}`);
    return { text };
  });
}
await client.close();
exitWithChecks();
