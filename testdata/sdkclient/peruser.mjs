#!/usr/bin/env node
// peruser.mjs is one user's official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `npm install --prefix testdata/npm-test`)
// of a hub with a per-user server (server/mcphttp's
// TestPerUserTSClientHearsItsOwn):
//
//   node peruser.mjs --url http://127.0.0.1:P/mcp --token T --who bob
//
// It connects (2025-11-25: a session, its GET stream) as the caller of
// token T, sets its log level to debug, and calls the per-user server's
// whoami tool (docs__whoami) with who; the hub asks it to sign in with a
// URL elicitation: it prints {"check":"sign in","url":...} and accepts
// once the test has signed in at that link (a line on stdin). Once the
// call has answered "hello WHO" it subscribes to file:///doc and prints
// {"check":"ready"}. Then, until stdin closes, it prints
// {"check":"got","method":...,"params":...} for every notification and
// request the hub sends it, and answers roots/list with file:///WHO and
// sampling with "sampled for WHO".

import { check, exitWithChecks, openSDK, patience, report, stdinLines } from "./sdk.mjs";

const { opt, Client, StreamableHTTPClientTransport, types } = await openSDK(
  "peruser.mjs",
  {
    url: { type: "string" },
    token: { type: "string" },
    who: { type: "string" },
  },
  ["url", "token", "who"],
);

const nextLine = stdinLines();
const client = new Client({ name: "peruser-" + opt.who, version: "1.0.0" }, { capabilities: { roots: {}, sampling: {}, elicitation: { url: {} } } });
const got = (method, params) => report("got", { ok: true, method, params });
client.fallbackNotificationHandler = async (n) => got(n.method, n.params);
client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
  got(req.method, req.params);
  if (req.params.mode !== "url") return { action: "decline" };
  report("sign in", { ok: true, url: req.params.url });
  await nextLine(); // the test has signed in at the link
  return { action: "accept" };
});
client.setRequestHandler(types.ListRootsRequestSchema, async (req) => {
  got(req.method, req.params);
  return { roots: [{ uri: "file:///" + opt.who }] };
});
client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
  got(req.method, req.params);
  return { model: "m", role: "assistant", content: { type: "text", text: "sampled for " + opt.who } };
});
client.onerror = (err) => process.stderr.write(`client: ${err}\n`);
const headers = { Authorization: `Bearer ${opt.token}` };
await client.connect(new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers } }), { timeout: patience });

const ready = await check("ready", async () => {
  await client.setLoggingLevel("debug", { timeout: patience });
  const res = await client.callTool({ name: "docs__whoami", arguments: { who: opt.who } }, undefined, { timeout: patience });
  if (res.content?.[0]?.text !== "hello " + opt.who) throw new Error(`whoami: ${JSON.stringify(res)}`);
  await client.subscribeResource({ uri: "file:///doc" }, { timeout: patience });
});
if (ready) while ((await nextLine()) !== "");
await client.close();
exitWithChecks();
