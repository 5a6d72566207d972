#!/usr/bin/env node
// server.mjs is a skills server made of the official TypeScript SDK v2's
// own parts (@modelcontextprotocol/server 2.4.0, installed by
// `npm install --prefix testdata/npm-test`): its McpServer over stdio, with the
// Skills extension (io.modelcontextprotocol/skills, SEP-2640) serving every
// skill folder under ROOT by the SDK's loadSkills: skills/list, skills/get,
// the files as skill:// resources and resources/directory/read.
//
//   node server.mjs ROOT
//
// Nothing here is the hub's: what the hub gets is what the SDK serves.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = process.argv[2];
if (!root) {
  process.stderr.write("usage: server.mjs ROOT\n");
  process.exit(2);
}
const dist = path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol", "server", "dist");
const load = (p) => import(pathToFileURL(path.join(dist, p)).href);
const { McpServer } = await load("index.mjs");
const { StdioServerTransport } = await load("stdio.mjs");
const { loadSkills } = await load("ext/skills/node.mjs");

const skills = await loadSkills(path.resolve(here, root), { strict: true });
const mcp = new McpServer({ name: "skills-" + path.basename(root), version: "1.0.0" });
skills.attach(mcp);
await mcp.connect(new StdioServerTransport());
