// sdk.mjs is what the SDK client scripts (relay.mjs, resume.mjs,
// calls.mjs, replicas.mjs, balancer.mjs) share: their flags, with --sdk
// (where @modelcontextprotocol/sdk is, installed by
// `npm ci --prefix testdata/npm-test`), and the SDK's modules.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));

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
