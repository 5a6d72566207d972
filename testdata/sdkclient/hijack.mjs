#!/usr/bin/env node
// hijack.mjs tries the session hijack of issue 20 (finding 1) on a hub
// served over Streamable HTTP, with two clients of the official TypeScript
// SDK (@modelcontextprotocol/sdk, from testdata/npm-test):
//
//   node hijack.mjs --url http://127.0.0.1:8080 --token-a A --token-b B
//
// The hub serves the everything server as group "everything" in flat mode,
// and knows tokens A and B as two credentials. Client A connects with A and
// opens its GET stream (the SDK does), turns the everything server's
// simulated logging on and starts a task. Client B, with token B, is given
// A's session id (as an attacker who learned it would) and tries the GET
// stream, a tools/call, tasks/result and DELETE with it: each must be 404,
// and A's session must go on (its calls answered, its task's result its
// own, log messages still reaching its stream). B's token must get 401 on
// the inspector's export and client list. Each check prints one JSON line
// on stdout, as run.mjs does; the exit status is 1 when a check failed.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { patience } from "./sdk.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    "token-a": { type: "string" },
    "token-b": { type: "string" },
    sdk: { type: "string", default: path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol", "sdk") },
    timeout: { type: "string", default: String(patience) },
  },
});
if (!opt.url || !opt["token-a"] || !opt["token-b"]) {
  process.stderr.write("hijack.mjs: --url, --token-a and --token-b are required\n");
  process.exit(2);
}

const esm = path.join(opt.sdk, "dist", "esm");
const load = (p) => import(pathToFileURL(path.join(esm, p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const types = await load("types.js");

const reqOpts = (more = {}) => ({ timeout: Number(opt.timeout), ...more });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let failed = 0;
function report(check, fields) {
  if (fields.ok === false) failed++;
  process.stdout.write(JSON.stringify({ check, transport: "http", ...fields }) + "\n");
}
class Skip extends Error {}
async function check(name, fn) {
  const start = Date.now();
  try {
    report(name, { ok: true, ms: Date.now() - start, ...((await fn()) ?? {}) });
  } catch (err) {
    if (err instanceof Skip) return report(name, { skip: err.message });
    report(name, { ok: false, ms: Date.now() - start, error: err?.message ?? String(err), ...(err?.details ?? {}) });
  }
}
function fail(message, details) {
  const err = new Error(message);
  err.details = details;
  throw err;
}

const mcpURL = new URL("/mcp", opt.url);
const bearer = (token) => ({ headers: { Authorization: `Bearer ${token}` } });

// ---- client A, the victim ----

const a = new Client({ name: "victim", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const logs = []; // the log messages A's stream brought
a.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => logs.push(n.params));
a.setRequestHandler(types.ElicitRequestSchema, async () => ({ action: "accept", content: {} }));
const aErrors = [];
const aTransport = new StreamableHTTPClientTransport(mcpURL, { requestInit: bearer(opt["token-a"]) });
aTransport.onerror = (err) => aErrors.push(err?.message ?? String(err));
let victim = "";
await check("a connects", async () => {
  await a.connect(aTransport, reqOpts());
  victim = aTransport.sessionId ?? "";
  if (!victim) fail("the hub gave A no session id");
  await a.setLoggingLevel("debug", reqOpts());
  // The hub answers before its upstream has started (a busy machine: many
  // seconds): its tools come once it has.
  const wait = Math.max(90_000, Number(opt.timeout));
  const deadline = Date.now() + wait;
  while (!(await a.listTools(undefined, reqOpts())).tools.some((t) => t.name === "everything__toggle-simulated-logging")) {
    if (Date.now() > deadline) fail(`the everything server's tools did not come through the hub in ${wait / 1000} s`);
    await sleep(100);
  }
});
if (!victim) process.exit(1);

// logWithin waits up to ms for a log message on A's stream beyond the
// first n, and says whether one came.
async function logWithin(n, ms) {
  const deadline = Date.now() + ms;
  while (logs.length <= n && Date.now() < deadline) await sleep(50);
  return logs.length > n;
}

await check("a's stream brings its log messages", async () => {
  // The everything server logs every 5 s once this is on: what it sends
  // during no request goes down A's GET stream.
  await a.callTool({ name: "everything__toggle-simulated-logging", arguments: {} }, undefined, reqOpts());
  if (!(await logWithin(0, 12_000))) fail("no log message reached A's GET stream in 12 s", { errors: aErrors });
  return { logs: logs.length };
});

let taskId = "everything~1";
let taskStarted = false;
await check("a starts a task", async () => {
  if (!a.getServerCapabilities()?.tasks?.requests?.tools?.call) throw new Skip("the hub does not declare tasks for tools/call");
  const created = await a.request({ method: "tools/call", params: { name: "everything__simulate-research-query", arguments: { topic: "A's secret research" } } },
    types.CreateTaskResultSchema, reqOpts({ task: {} }));
  if (!created.task?.taskId) fail("no task id", { created });
  taskId = created.task.taskId;
  taskStarted = true;
  return { taskId };
});

// ---- client B, the attacker, with A's session id ----

const b = new Client({ name: "attacker", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const bTransport = new StreamableHTTPClientTransport(mcpURL, { requestInit: bearer(opt["token-b"]), sessionId: victim });
bTransport.onerror = () => {}; // each refusal is checked below
await check("b takes a's session id", async () => {
  // With a session id the SDK resumes that session: no initialize.
  await b.connect(bTransport, reqOpts());
  if (bTransport.sessionId !== victim) fail("B's transport does not carry A's session id");
});

// refused runs fn, which must fail with HTTP 404: the session is unknown to B.
async function refused(fn) {
  try {
    const res = await fn();
    fail("the hub served B with A's session", { result: res });
  } catch (err) {
    if (err?.code !== 404) fail(`want HTTP 404, got ${err?.code}: ${err?.message}`);
  }
}

const logsBefore = logs.length;
await check("b's GET /mcp with a's session is 404", () => refused(() => bTransport.resumeStream(undefined)));
await check("b's tools/call with a's session is 404", () =>
  refused(() => b.callTool({ name: "everything__echo", arguments: { message: "b was here" } }, undefined, reqOpts())));
await check("b's tasks/result with a's session is 404", () =>
  refused(() => b.request({ method: "tasks/result", params: { taskId } }, types.GetTaskPayloadResultSchema, reqOpts())));
await check("b's tasks/get with a's session is 404", () =>
  refused(() => b.request({ method: "tasks/get", params: { taskId } }, types.GetTaskPayloadResultSchema, reqOpts())));
await check("b's DELETE of a's session is 404", () => refused(() => bTransport.terminateSession()));

// ---- A's session goes on ----

await check("a's call is still answered", async () => {
  const res = await a.callTool({ name: "everything__echo", arguments: { message: "still mine" } }, undefined, reqOpts());
  const text = res.content?.[0]?.text ?? "";
  if (!text.includes("still mine")) fail("A's echo", { result: res });
});
await check("a's stream is still a's", async () => {
  if (!(await logWithin(logsBefore, 12_000))) fail("no log message reached A's GET stream in 12 s after B's tries", { errors: aErrors });
});
await check("a's task result is a's", async () => {
  if (!taskStarted) throw new Skip("no task was started");
  const res = await a.request({ method: "tasks/result", params: { taskId } }, types.CallToolResultSchema, reqOpts({ timeout: Math.max(30_000, Number(opt.timeout)) }));
  const text = JSON.stringify(res.content ?? []);
  if (!text.includes("A's secret research")) fail("A's task result", { result: res });
});

// ---- B's MCP token and the inspector ----

for (const api of ["export", "clients"]) {
  await check(`b's token on /ui/api/${api} is 401`, async () => {
    const res = await fetch(new URL(`/ui/api/${api}`, opt.url), bearer(opt["token-b"]));
    const body = await res.text();
    if (res.status !== 401) fail(`HTTP ${res.status}`, { body: body.slice(0, 300) });
    if (body.includes(victim)) fail("the refusal names A's session");
  });
}

await a.close();
await b.close();
process.exit(failed ? 1 : 0);
