#!/usr/bin/env node
// calls.mjs is the official TypeScript SDK client (@modelcontextprotocol/sdk,
// installed by `npm install --prefix testdata/npm-test`) over Streamable HTTP,
// making the tool calls a test asks for, as they are asked, without waiting
// for one to be answered before starting the next (a call may wait for a
// person's approval meanwhile). It declares no elicitation: a `prompt`
// rule sends its calls to the hub's approval inbox.
//
//   NODE_EXTRA_CA_CERTS=ca.pem node calls.mjs --url https://127.0.0.1:8443/mcp --token TOKEN
//
// It initializes once, waits until the tool --tool is listed three times in
// a row (behind a round-robin balancer, by three replicas), and prints
// {"ready":true,"session":...}. Then each line on stdin, {"id":"x","text":"..."},
// calls --tool with {"text": ...}; its answer is printed as one JSON line:
// {"id":"x","text":...,"isError":...} or {"id":"x","code":...,"message":...,"data":...},
// with "sameSession" false should the session have changed. It exits when
// stdin closes and every call is answered; the exit status is 2 on a usage
// error, 1 when it could not get ready.

import readline from "node:readline";
import { openSDK, patience } from "./sdk.mjs";

const { opt, Client, StreamableHTTPClientTransport, types } = await openSDK(
  "calls.mjs",
  {
    url: { type: "string" },
    token: { type: "string" },
    tool: { type: "string", default: "f__echo" },
    timeout: { type: "string", default: String(Math.max(60000, patience)) }, // ms, one call
  },
  ["url", "token"],
);

const timeout = Number(opt.timeout);
const print = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const transport = new StreamableHTTPClientTransport(new URL(opt.url), {
  requestInit: { headers: { Authorization: `Bearer ${opt.token}` } },
});
const client = new Client({ name: "calls.mjs", version: "1.0.0" }, { capabilities: {} });
let session = "";
try {
  await client.connect(transport, { timeout: patience });
  session = transport.sessionId;
  if (!session) throw new Error("no Mcp-Session-Id in the answer to initialize");
  const deadline = Date.now() + 30000;
  for (let seen = 0; seen < 3; ) {
    const { tools } = await client.listTools(undefined, { timeout: patience });
    seen = tools.some((t) => t.name === opt.tool) ? seen + 1 : 0;
    if (Date.now() > deadline) throw new Error(`no ${opt.tool} in ${JSON.stringify(tools.map((t) => t.name))}`);
    if (seen < 3) await new Promise((r) => setTimeout(r, 50));
  }
} catch (err) {
  print({ ready: false, error: String(err?.message ?? err) });
  process.exit(1);
}
print({ ready: true, session });

const calls = [];
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const { id, text } = JSON.parse(line);
  calls.push(
    (async () => {
      const out = { id };
      try {
        const res = await client.callTool({ name: opt.tool, arguments: { text } }, undefined, { timeout });
        out.text = res.content?.[0]?.text;
        out.isError = !!res.isError;
      } catch (err) {
        if (err instanceof types.McpError) Object.assign(out, { code: err.code, message: err.message, data: err.data });
        else out.message = String(err?.message ?? err);
      }
      out.sameSession = transport.sessionId === session;
      print(out);
    })(),
  );
}
await Promise.all(calls);
await client.close().catch(() => {});
process.exit(0);
