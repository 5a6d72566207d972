// sdk.mjs is what the SDK client scripts (relay.mjs, resume.mjs,
// calls.mjs, replicas.mjs, balancer.mjs) share: their flags, with --sdk
// (where @modelcontextprotocol/sdk is, installed by
// `npm install --prefix testdata/npm-test`), and the SDK's modules.

import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));

// patience is how long (ms) one request may take before a script gives
// up: SDKCLIENT_TIMEOUT_MS, which the tests set (cmd/dynamic-mcp's
// clientTimeout) longer than the hub's wait for a node server, so that a
// loaded machine's slowness is never the client's failure; 15 s when a
// script is run by hand.
export const patience = Number(process.env.SDKCLIENT_TIMEOUT_MS) || 15000;

// openSDK parses the script's flags (options, and --sdk), exits 2 with
// "script: --a, --b and --c are required" when one of required is
// missing, and loads the SDK: { opt, Client, StreamableHTTPClientTransport, types }.
export async function openSDK(script, options, required) {
  const { values: opt } = parseArgs({
    options: {
      ...options,
      sdk: { type: "string", default: path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol", "sdk") },
    },
  });
  if (required.some((name) => !opt[name])) {
    const flags = required.map((name) => `--${name}`);
    const list = flags.length === 1 ? flags[0] : `${flags.slice(0, -1).join(", ")} and ${flags.at(-1)}`;
    process.stderr.write(`${script}: ${list} ${flags.length === 1 ? "is" : "are"} required\n`);
    process.exit(2);
  }
  const esm = path.join(opt.sdk, "dist", "esm");
  const load = (p) => import(pathToFileURL(path.join(esm, p)).href);
  const { Client } = await load("client/index.js");
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  const types = await load("types.js");
  return { opt, Client, StreamableHTTPClientTransport, types };
}

// Checks: each is one JSON line on stdout, {"check": ..., "ok": true|false, ...};
// exitWithChecks exits 1 when one failed, else 0.
let failed = 0;
export function report(check, fields) {
  if (fields.ok === false) failed++;
  process.stdout.write(JSON.stringify({ check, ...fields }) + "\n");
}
export function exitWithChecks() {
  process.exit(failed > 0 ? 1 : 0);
}

// check reports name ok, with the fields fn returns, or not ok with the
// error and failFields.
export async function check(name, fn, failFields = {}) {
  try {
    report(name, { ok: true, ...((await fn()) ?? {}) });
    return true;
  } catch (err) {
    report(name, { ok: false, error: String(err?.message ?? err), ...failFields });
    return false;
  }
}

// timedCheck is check with the time fn took (ms), ok or not, and an
// McpError (of the SDK's types) named with its code.
export async function timedCheck(name, fn, types) {
  const start = Date.now();
  try {
    const extra = (await fn()) ?? {};
    report(name, { ok: true, ms: Date.now() - start, ...extra });
    return true;
  } catch (err) {
    const error = err instanceof types.McpError ? `MCP error ${err.code}: ${err.message}` : String(err?.message ?? err);
    report(name, { ok: false, ms: Date.now() - start, error });
    return false;
  }
}

// stdinLines returns nextLine, which resolves to the next line the test
// writes to stdin ("" once stdin is closed).
export function stdinLines() {
  const lines = readline.createInterface({ input: process.stdin });
  const queued = [];
  let waiter = null;
  lines.on("line", (l) => { if (waiter) { const w = waiter; waiter = null; w(l); } else queued.push(l); });
  lines.on("close", () => { if (waiter) { const w = waiter; waiter = null; w(""); } });
  return () => queued.length ? Promise.resolve(queued.shift()) : new Promise((r) => { waiter = r; });
}

// watchFloods collects in got the data of every log message of the fake's
// flood tool client gets; waitGot(n, ms) waits until there are n;
// untilLive(flood) calls flood(3) until the three reach the client (its
// GET stream opens after initialize), within 15 s.
export function watchFloods(client, types) {
  const got = [];
  let onGot = () => {};
  client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => {
    if (String(n.params.logger).endsWith("flood")) { got.push(n.params.data); onGot(); }
  });
  async function waitGot(n, ms) {
    const deadline = Date.now() + ms;
    while (got.length < n) {
      if (Date.now() > deadline) throw new Error(`got ${JSON.stringify(got)}, want ${n} messages`);
      await new Promise((r) => { onGot = r; setTimeout(r, 50); });
    }
  }
  async function untilLive(flood) {
    const deadline = Date.now() + 15000;
    for (;;) {
      got.length = 0;
      await flood(3);
      try { await waitGot(3, 1000); break; } catch (err) { if (Date.now() > deadline) throw err; }
    }
    if (JSON.stringify(got) !== "[0,1,2]") throw new Error(`live: ${JSON.stringify(got)}`);
  }
  return { got, waitGot, untilLive };
}
