#!/usr/bin/env node
// replicas.mjs drives several dynamic-mcp replicas behind a balancer (the
// nginx of examples/nginx, round-robin over replicas that share
// http.session_keys) with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `npm install --prefix testdata/npm-test`)
// over Streamable HTTP, while the test kills a replica mid-session:
//
//   NODE_EXTRA_CA_CERTS=ca.pem node replicas.mjs --url https://127.0.0.1:8443/mcp \
//     --token TOKEN --group f
//
// It initializes once, makes --calls calls of the group's echo tool, and
// prints {"check":"before kill",...}; then it waits for a line on stdin
// (the test has killed a replica), and calls echo until one succeeds,
// printing {"check":"after kill","ms":...}: the time from that line to the
// first successful call, in the same session (no new initialize); then
// --calls more calls ("calls after kill"). Each check prints one JSON line
// on stdout, as run.mjs's do. The exit status is 1 when a check failed, 2
// on a usage error.

import readline from "node:readline";
import { exitWithChecks, openSDK, patience, timedCheck } from "./sdk.mjs";

const { opt, Client, StreamableHTTPClientTransport, types } = await openSDK(
  "replicas.mjs",
  {
    url: { type: "string" },
    token: { type: "string" },
    group: { type: "string", default: "f" },
    calls: { type: "string", default: "10" },
    timeout: { type: "string", default: String(patience) }, // ms, one request
  },
  ["url", "token"],
);

const timeout = Number(opt.timeout);
const calls = Number(opt.calls);
const echo = `${opt.group}__echo`;

const check = (name, fn) => timedCheck(name, fn, types);

const transport = new StreamableHTTPClientTransport(new URL(opt.url), {
  requestInit: { headers: { Authorization: `Bearer ${opt.token}` } },
});
const client = new Client({ name: "replicas.mjs", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });

async function callEcho(text, t = timeout) {
  const res = await client.callTool({ name: echo, arguments: { text } }, undefined, { timeout: t });
  if (res.content?.[0]?.text !== text || res.isError) throw new Error(`result ${JSON.stringify(res)}`);
}

let session = "";
const ready = await check("before kill", async () => {
  await client.connect(transport, { timeout });
  session = transport.sessionId;
  if (!session) throw new Error("no Mcp-Session-Id in the answer to initialize");
  // Every replica's upstream starts on its own: wait for the group.
  const deadline = Date.now() + timeout;
  for (;;) {
    const { tools } = await client.listTools(undefined, { timeout });
    if (tools.some((t) => t.name === echo)) break;
    if (Date.now() > deadline) throw new Error(`no ${echo} in ${JSON.stringify(tools.map((t) => t.name))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  for (let i = 0; i < calls; i++) await callEcho(`before ${i}`);
  return { calls, sessionLength: session.length };
});

if (ready) {
  const lines = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once("line", resolve));
  lines.close();
  await check("after kill", async () => {
    const start = Date.now();
    let attempts = 0;
    for (;;) {
      attempts++;
      try {
        await callEcho("after", 5000);
        break;
      } catch (err) {
        if (Date.now() - start > 30000) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (transport.sessionId !== session) throw new Error(`the session changed: ${transport.sessionId} after ${session}`);
    return { resumeMs: Date.now() - start, attempts };
  });
  await check("calls after kill", async () => {
    for (let i = 0; i < calls; i++) await callEcho(`after ${i}`);
    if (transport.sessionId !== session) throw new Error("the session changed");
    return { calls };
  });
}

await client.close().catch(() => {});
exitWithChecks();
