#!/usr/bin/env node
// gemini.mjs connects to dynamic-mcp over stdio exactly as Gemini CLI does,
// with Gemini CLI's own code (@google/gemini-cli-core, installed by
// `npm install --prefix testdata/npm-test`): its connectToMcpServer builds the
// TypeScript SDK Client (the SDK version Gemini CLI pins) and wraps the
// SDK's StdioClientTransport in its McpComplianceTransport, whose
// fixStructuredContent parses the first text of any tool result without
// structuredContent and stores it as structuredContent. The SDK's
// CallToolResultSchema takes only an object there: a meta-tool that
// answered a bare JSON array failed in Gemini CLI with "expected record,
// received array".
//
//   node gemini.mjs --hub '["dynamic-mcp", "serve", "-c", "c.yaml"]' --group everything
//   node gemini.mjs --hubs '{"a": ["dynamic-mcp", "serve", "-c", "a.yaml"], "b": [...]}'
//
// Each hub's config has the everything server in --group, search on.
// --hubs names several hubs, checked at once by one process (one load of
// gemini-cli-core, some 4 s of CPU), each hub's checks named NAME/check.
// Each check prints one JSON line on stdout, as run.mjs does: {"check":
// ..., "ok": true|false, ...}. The exit status is 1 when a check failed, 2
// on a usage error.

import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { patience } from "./sdk.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    hub: { type: "string" },
    hubs: { type: "string" },
    group: { type: "string", default: "everything" },
    timeout: { type: "string", default: String(Math.max(60000, patience)) },
  },
});
if (!opt.hub === !opt.hubs) {
  process.stderr.write("gemini.mjs: --hub: the hub's command line as a JSON list, or --hubs: an object of them by name\n");
  process.exit(2);
}
// The hubs by name; "" names the one hub of --hub, whose checks have no prefix.
const hubs = opt.hub ? { "": JSON.parse(opt.hub) } : JSON.parse(opt.hubs);
const timeout = Number(opt.timeout);

const coreDir = path.join(here, "..", "npm-test", "node_modules", "@google", "gemini-cli-core");
const core = await import(pathToFileURL(path.join(coreDir, "dist", "index.js")).href);
// The module that defines the wrapper, for the control check, and the SDK
// gemini-cli-core itself resolves, for its result schema.
const { McpComplianceTransport } = await import(pathToFileURL(path.join(coreDir, "dist", "src", "tools", "mcp-compliance-transport.js")).href);
const { CallToolResultSchema } = createRequire(path.join(coreDir, "dist", "index.js"))("@modelcontextprotocol/sdk/types.js");

let failed = 0;
async function check(name, fn) {
  try {
    const extra = (await fn()) ?? {};
    process.stdout.write(JSON.stringify({ check: name, ok: true, ...extra }) + "\n");
  } catch (err) {
    failed++;
    process.stdout.write(JSON.stringify({ check: name, ok: false, error: String(err?.stack ?? err) }) + "\n");
  }
}
function fail(msg, details) {
  throw new Error(details ? `${msg}: ${JSON.stringify(details).slice(0, 2000)}` : msg);
}

// The control: Gemini's wrapper turns a bare array text into a
// structuredContent the SDK's schema refuses, so the checks below would
// see the failure Gemini CLI users saw.
await check("control: a bare array text is refused", async () => {
  const inner = { start: async () => {}, close: async () => {}, send: async () => {} };
  const wrapper = new McpComplianceTransport(inner);
  let got;
  wrapper.onmessage = (m) => { got = m; };
  inner.onmessage({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: '[{"name":"echo"}]' }] } });
  if (!Array.isArray(got?.result?.structuredContent)) fail("fixStructuredContent did not store the parsed array", got);
  if (CallToolResultSchema.safeParse(got.result).success) fail("the SDK's CallToolResultSchema took an array as structuredContent");
});

// What connectToMcpServer needs of Gemini CLI's config and workspace for a
// stdio server in a trusted folder.
const cliConfig = { isTrustedFolder: () => true, sanitizationConfig: {}, emitMcpDiagnostic: () => {} };
const workspace = { getDirectories: () => [here], onDirectoriesChanged: () => () => {} };
// Gemini CLI drops variables that look secret from a server's environment;
// the test's DYNAMIC_MCP_* (the hub's home, ...) are passed as a server's
// env: would be.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("DYNAMIC_MCP_")));

// checkHub runs the checks against the hub argv, each check's name
// prefixed with prefix.
async function checkHub(prefix, [command, ...args]) {
  const server = { command, args, env, timeout };
  let client;
  await check(prefix + "transport", async () => {
    client = await core.connectToMcpServer("0.61.0", "dynamic-mcp", server, false, workspace, cliConfig);
    const name = client.transport?.constructor?.name;
    if (name !== "McpComplianceTransport") fail(`the client's transport is ${name}, not Gemini's McpComplianceTransport`);
    return { transport: name };
  });
  if (!client) return;

  // callTool as Gemini CLI's McpCallableTool calls it: the SDK checks the
  // result against CallToolResultSchema and the tool's outputSchema.
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout });

  await check(prefix + "get_dynamic_tools", async () => {
    const { tools } = await client.listTools(undefined, { timeout });
    const res = await call("get_dynamic_tools", { group: opt.group });
    if (res.isError) fail("get_dynamic_tools failed", res);
    for (const name of ["get_dynamic_tools", "search_dynamic_tools"]) {
      if (!tools.find((t) => t.name === name)?.outputSchema) fail(`${name} has no outputSchema`);
    }
    const sc = res.structuredContent;
    if (sc?.group !== opt.group || !sc.tools?.some((t) => t.name === "echo")) fail("no echo in structuredContent", sc);
    return { tools: sc.tools.length };
  });

  await check(prefix + "search_dynamic_tools", async () => {
    const res = await call("search_dynamic_tools", { query: "repeat my message back" });
    if (res.isError) fail("search_dynamic_tools failed", res);
    const best = res.structuredContent?.tools?.[0];
    if (best?.group !== opt.group || best?.name !== "echo") fail("echo is not found first", res.structuredContent);
    return { best: `${best.group}/${best.name}` };
  });

  await check(prefix + "call_dynamic_tool", async () => {
    const res = await call("call_dynamic_tool", { group: opt.group, name: "echo", args: { message: "hi" } });
    if (res.isError || res.content?.[0]?.text !== "Echo: hi") fail("echo through the hub", res);
  });

  await client.close();
}

await Promise.all(Object.entries(hubs).map(([name, argv]) => checkHub(name ? name + "/" : "", argv)));
process.exit(failed ? 1 : 0);
