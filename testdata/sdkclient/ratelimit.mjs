#!/usr/bin/env node
// ratelimit.mjs drives dynamic-mcp's loop guards (policy rate:) with the
// official TypeScript SDK client over stdio. The hub's config (see
// TestSDKClientRateLimit) has group f, the fake upstream, with two rules on
// its echo tool: text "deny*" at 3/minute (then: deny), text "ask*" at
// 1/minute with then: prompt. The client declares form elicitation and
// answers the hub's questions: accept the first, decline the second.
//
//   node ratelimit.mjs --hub '["dynamic-mcp", "serve", "-c", "rate.yaml"]'
//
// Each check prints one JSON line on stdout: {"check": ..., "ok": ...}.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    hub: { type: "string" },
    sdk: { type: "string", default: path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol", "sdk") },
  },
});
if (!opt.hub) {
  process.stderr.write("ratelimit.mjs: --hub: the hub's command line as a JSON list\n");
  process.exit(2);
}
const esm = path.join(opt.sdk, "dist", "esm");
const load = (p) => import(pathToFileURL(path.join(esm, p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const types = await load("types.js");

let failed = false;
function report(check, ok, detail) {
  if (!ok) failed = true;
  process.stdout.write(JSON.stringify({ check, ok, ...detail }) + "\n");
}

const [command, ...args] = JSON.parse(opt.hub);
const client = new Client({ name: "sdk-ratelimit", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const questions = [];
const answers = ["accept", "decline"];
client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
  questions.push(req.params.message);
  return { action: answers.shift() ?? "decline" };
});
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));

// echo calls f__echo with text: its text, or the error's code, message
// and data.
async function echo(text) {
  try {
    const res = await client.callTool({ name: "f__echo", arguments: { text } });
    return { text: res.content?.[0]?.text, isError: !!res.isError };
  } catch (err) {
    if (err instanceof types.McpError) return { code: err.code, message: err.message, data: err.data };
    throw err;
  }
}

// The tools come once the upstream is up.
for (let i = 0; i < 100; i++) {
  const { tools } = await client.listTools();
  if (tools.some((t) => t.name === "f__echo")) break;
  await new Promise((r) => setTimeout(r, 100));
}

{
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await echo("deny"));
  const fourth = got[3];
  const ok = got.slice(0, 3).every((r) => r.text === "deny" && !r.isError) &&
    fourth.code === -32001 && fourth.data?.rule === "echo-rate" && fourth.data?.action === "rate" &&
    typeof fourth.data?.retryAfter === "number" && fourth.data.retryAfter >= 1 && fourth.data.retryAfter <= 20 &&
    /Rate limit 3\/minute per session of rule echo-rate exceeded; retry after \d+s/.test(fourth.message);
  report("3/minute: the 4th call refused with retryAfter", ok, { got });
}

{
  const first = await echo("ask");
  const asked = questions.length;
  const second = await echo("ask"); // over 1/minute: asked, accepted
  const third = await echo("ask"); // asked, declined
  const ok = first.text === "ask" && asked === 0 && second.text === "ask" && !second.isError &&
    questions.length === 2 && questions.every((q) => q.includes("Rate limit 1/minute per session of rule ask-rate exceeded")) &&
    third.code === -32001 && third.data?.action === "rate" && /decline/.test(third.message);
  report("then: prompt: over the limit the client is asked; accept passes, decline refuses", ok, { first, second, third, questions });
}

await client.close();
process.exit(failed ? 1 : 0);
