#!/usr/bin/env node
// balancer.mjs drives dynamic-mcp through a balancer in front of it (the
// nginx of examples/nginx) with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `npm install --prefix testdata/npm-test`)
// over Streamable HTTP: initialize, tools/list, tools/call, and a
// notification the hub sends on the session's GET stream.
//
//   NODE_EXTRA_CA_CERTS=ca.pem node balancer.mjs --url https://127.0.0.1:8443/mcp \
//     --token TOKEN --group f
//
// The hub's config is flat mode with one group (--group) of the tests'
// fake upstream (its echo and mutate tools). Each check prints one JSON
// line on stdout, as run.mjs's do: {"check": ..., "ok": true|false, ...}.
// The exit status is 1 when a check failed, 2 on a usage error.

import { exitWithChecks, openSDK, patience, timedCheck } from "./sdk.mjs";

const { opt, Client, StreamableHTTPClientTransport, types } = await openSDK(
  "balancer.mjs",
  {
    url: { type: "string" },
    token: { type: "string" },
    group: { type: "string", default: "f" },
    timeout: { type: "string", default: String(patience) }, // ms, one request or the notification
  },
  ["url", "token"],
);

const timeout = Number(opt.timeout);
const tool = (name) => `${opt.group}__${name}`;

const check = (name, fn) => timedCheck(name, fn, types);

const transport = new StreamableHTTPClientTransport(new URL(opt.url), {
  requestInit: { headers: { Authorization: `Bearer ${opt.token}` } },
});
const client = new Client({ name: "balancer.mjs", version: "1.0.0" });
// Notifications of a changed tool list, with when each came.
const changed = [];
let onChanged = () => {};
client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => {
  changed.push(Date.now());
  onChanged();
});

const connected = await check("initialize", async () => {
  await client.connect(transport, { timeout });
  const info = client.getServerVersion();
  if (info?.name !== "dynamic-mcp") throw new Error(`server is ${JSON.stringify(info)}, want dynamic-mcp`);
  // The session id came back through the balancer, and goes with every
  // later request.
  if (!transport.sessionId) throw new Error("no Mcp-Session-Id in the answer to initialize");
  return { protocolVersion: transport.protocolVersion };
});

if (connected) {
  await check("tools/list", async () => {
    // The hub answers before its upstream is up: wait for the group.
    const deadline = Date.now() + timeout;
    for (;;) {
      const { tools } = await client.listTools(undefined, { timeout });
      const names = tools.map((t) => t.name);
      if (names.includes(tool("echo")) && names.includes(tool("mutate"))) return { tools: names.length };
      if (Date.now() > deadline) throw new Error(`no ${tool("echo")} and ${tool("mutate")} in ${JSON.stringify(names)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  await check("tools/call", async () => {
    const res = await client.callTool({ name: tool("echo"), arguments: { text: "through the balancer" } }, undefined, { timeout });
    const text = res.content?.[0]?.text;
    if (text !== "through the balancer" || res.isError) throw new Error(`result ${JSON.stringify(res)}`);
  });

  // mutate answers, then its server says that its tools changed: the hub
  // passes that on to the session on its GET stream, which the SDK opened
  // after initialize. Through a buffering proxy it would wait for the
  // buffer to fill.
  await check("notification on the GET stream", async () => {
    const got = new Promise((resolve, reject) => {
      onChanged = resolve;
      setTimeout(() => reject(new Error(`no notifications/tools/list_changed within ${timeout} ms`)), timeout);
    });
    const sent = Date.now();
    await client.callTool({ name: tool("mutate"), arguments: {} }, undefined, { timeout });
    await got;
    return { sinceCallMs: changed[0] - sent };
  });
}

await client.close().catch(() => {});
exitWithChecks();
