#!/usr/bin/env node
// relay.mjs shows that the official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `npm install --prefix testdata/npm-test`)
// is served by replicas behind a round-robin balancer with no sticky
// sessions (store: with http.session_keys): every request may reach
// another replica.
//
//   node relay.mjs --url https://127.0.0.1:P/mcp --token T
//
// Client A warms up (a few calls, so that every replica holds its
// session), then client B calls the fake's flood tool (group f), whose
// log messages reach every session of the replica that runs it; A gets
// the first flood (3 messages) on its GET stream, wherever that is
// open, and prints {"check":"live"}; then {"check":"kill me"}, and waits
// for a line on stdin: the URL of a replica that lives on, where client C
// floods (2 messages each time) in a loop, {"check":"flooding"} after the
// first, while the test kills the replica holding A's GET stream;
// {"check":"flooded"} after 20 more. A's SDK reconnects its GET stream
// with Last-Event-ID, through the balancer, to another replica, and must
// get every message of every flood, in order, none twice, then one more
// flood live ({"check":"resumed"}). Then A calls the ask tool of group g three
// times: each elicits, A's SDK answers (a POST the balancer sends where
// it likes), and each call must come back with A's answer within its
// time ({"check":"elicited"}). The exit status is 1 when a check failed.

import { check, exitWithChecks, openSDK, patience, report, stdinLines, watchFloods } from "./sdk.mjs";

const { opt, Client, StreamableHTTPClientTransport, types } = await openSDK(
  "relay.mjs",
  {
    url: { type: "string" },
    token: { type: "string" },
  },
  ["url", "token"],
);

const nextLine = stdinLines();

const headers = { Authorization: `Bearer ${opt.token}` };
const reconnectionOptions = { initialReconnectionDelay: 200, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 50 };
const a = new Client({ name: "relay-a", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const b = new Client({ name: "relay-b", version: "1.0.0" }, { capabilities: {} });
const { got, waitGot, untilLive } = watchFloods(a, types); // the data of every flood log message A gets
let asked = 0;
a.setRequestHandler(types.ElicitRequestSchema, async () => { asked++; return { action: "accept", content: { name: "ada" } }; });
a.onerror = (err) => process.stderr.write(`client a: ${err}\n`);
await a.connect(new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers }, reconnectionOptions }), { timeout: patience });
await b.connect(new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers }, reconnectionOptions }), { timeout: patience });

// retrying runs fn again when the balancer answered for a replica just
// killed (its kept-alive connection to it broken): the request did not
// run there.
async function retrying(fn) {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= 4 || !/\b50[234]\b|fetch failed|ECONNRESET|socket/i.test(String(err?.message ?? err))) throw err;
      process.stderr.write(`retrying after: ${err}\n`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}
async function flood(n) {
  const res = await retrying(() => b.callTool({ name: "f__flood", arguments: { text: "notifications/message", ms: n } }, undefined, { timeout: patience }));
  if (res.content?.[0]?.text !== "flooded") throw new Error(`flood: ${JSON.stringify(res)}`);
}
const checkGot = (name, fn) => check(name, fn, { got });

// Round robin: a few requests reach every replica, each of which then
// holds A's session (and runs B's floods into it).
for (let i = 0; i < 6; i++) await a.listTools(undefined, { timeout: patience });

// A's GET stream opens after initialize: wait until a flood reaches it.
const live = await checkGot("live", () => untilLive(flood));
if (live) {
  report("kill me", { ok: true });
  // The test names a replica that will live: client C floods there (so
  // that no flood runs on the replica killed), in a loop, while the
  // test kills the replica holding A's GET stream.
  const direct = await nextLine();
  const c = new Client({ name: "relay-c", version: "1.0.0" }, { capabilities: {} });
  await c.connect(new StreamableHTTPClientTransport(new URL(direct), { requestInit: { headers } }), { timeout: patience });
  let floods = 0;
  const floodC = async () => {
    const res = await c.callTool({ name: "f__flood", arguments: { text: "notifications/message", ms: 2 } }, undefined, { timeout: patience });
    if (res.content?.[0]?.text !== "flooded") throw new Error(`flood: ${JSON.stringify(res)}`);
    floods++;
  };
  await checkGot("flooding", floodC);
  await checkGot("flooded", async () => {
    for (let i = 0; i < 20; i++) {
      await floodC();
      await new Promise((r) => setTimeout(r, 25));
    }
    return { floods };
  });
  await checkGot("resumed", async () => {
    await waitGot(3 + 2 * floods, 20000);
    await floodC(); // live, on the GET stream reopened
    await waitGot(3 + 2 * floods, 10000);
    await new Promise((r) => setTimeout(r, 300));
    const want = [0, 1, 2, ...Array(floods).fill([0, 1]).flat()];
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    return { floods };
  });
  await c.close().catch(() => {});
  await checkGot("elicited", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await retrying(() => a.callTool({ name: "g__ask", arguments: {} }, undefined, { timeout: patience }));
      const text = res.content?.[0]?.text ?? "";
      if (res.isError || !text.includes("ada")) throw new Error(`ask ${i}: ${JSON.stringify(res)}`);
    }
    return { asked };
  });
}
lines.close();
await a.close().catch(() => {});
await b.close().catch(() => {});
exitWithChecks();
