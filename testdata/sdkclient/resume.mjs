#!/usr/bin/env node
// resume.mjs shows that the official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `npm install --prefix testdata/npm-test`)
// loses no notification when its GET stream is cut: client A connects
// through --url (a proxy the test cuts), client B directly at --direct and
// calls the fake's flood tool, whose log messages reach every session.
//
//   node resume.mjs --url http://127.0.0.1:P/mcp --direct http://127.0.0.1:Q/mcp --token T
//
// A gets B's first flood (3 messages) live and prints {"check":"live"};
// it prints {"check":"cut me"} and waits for a line on stdin (the test cut
// A's connections and holds new ones); B floods 4 more and prints
// {"check":"flooded"}; after the next line on stdin (the test lets A's
// connections through again) A must get exactly those 4, in order (its
// SDK resumes its GET stream with Last-Event-ID), then B's last 2 live:
// {"check":"resumed"}. The exit status is 1 when a check failed.

import { check, exitWithChecks, openSDK, patience, report, stdinLines, watchFloods } from "./sdk.mjs";

const { opt, Client, StreamableHTTPClientTransport, types } = await openSDK(
  "resume.mjs",
  {
    url: { type: "string" },
    direct: { type: "string" },
    token: { type: "string" },
  },
  ["url", "direct", "token"],
);

const nextLine = stdinLines();

const headers = { Authorization: `Bearer ${opt.token}` };
const a = new Client({ name: "resume-a", version: "1.0.0" }, { capabilities: {} });
const b = new Client({ name: "resume-b", version: "1.0.0" }, { capabilities: {} });
const { got, waitGot, untilLive } = watchFloods(a, types); // the data of every flood log message A gets
a.onerror = (err) => process.stderr.write(`client a: ${err}\n`);
a.fallbackNotificationHandler = async (n) => process.stderr.write(`client a: ${JSON.stringify(n)}\n`);
const ta = new StreamableHTTPClientTransport(new URL(opt.url), {
  requestInit: { headers },
  reconnectionOptions: { initialReconnectionDelay: 200, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 50 },
});
await a.connect(ta, { timeout: patience });
await a.setLoggingLevel("debug").catch((err) => process.stderr.write(`setLoggingLevel: ${err}\n`));
await b.connect(new StreamableHTTPClientTransport(new URL(opt.direct), { requestInit: { headers } }), { timeout: patience });

async function flood(n) {
  const res = await b.callTool({ name: "f__flood", arguments: { text: "notifications/message", ms: n } }, undefined, { timeout: patience });
  if (res.content?.[0]?.text !== "flooded") throw new Error(`flood: ${JSON.stringify(res)}`);
}
const checkGot = (name, fn) => check(name, fn, { got });

// A's GET stream opens after initialize: wait until a flood reaches it.
const live = await checkGot("live", () => untilLive(flood));
if (live) {
  report("cut me", { ok: true });
  await nextLine();
  await checkGot("flooded", () => flood(4));
  await nextLine();
  await checkGot("resumed", async () => {
    await waitGot(7, 20000);
    await flood(2);
    await waitGot(9, 10000);
    await new Promise((r) => setTimeout(r, 200));
    if (JSON.stringify(got) !== "[0,1,2,0,1,2,3,0,1]") throw new Error(`got ${JSON.stringify(got)}`);
  });
}
lines.close();
await a.close().catch(() => {});
await b.close().catch(() => {});
exitWithChecks();
