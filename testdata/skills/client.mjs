#!/usr/bin/env node
// client.mjs is the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0, installed by
// `npm install --prefix testdata/npm-test`) with its SkillsClient, the host side
// of the Skills extension (SEP-2640), reading every skill a server serves
// and verifying every file against its entry (size, SHA-256 digest, and
// for SKILL.md the frontmatter), as a host must before it loads a skill.
//
//   node client.mjs [--era legacy|modern] -- COMMAND ARGS...
//
// It starts COMMAND as a stdio server and prints one JSON object:
// {"supported", "directoryRead", "skills": [{uri, name, get, files: [{uri,
// size, sha256, verified}], directory: [uri...]}]}, where sha256 is of the
// bytes it read, computed here. Any failure of the SDK's checks exits 1
// with the error on stderr.

import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt, positionals } = parseArgs({
  options: { era: { type: "string", default: "legacy" } },
  allowPositionals: true,
});
if (positionals.length === 0) {
  process.stderr.write("usage: client.mjs [--era legacy|modern] -- COMMAND ARGS...\n");
  process.exit(2);
}
const dist = path.join(here, "..", "npm-test", "node_modules", "@modelcontextprotocol", "client", "dist");
const load = (p) => import(pathToFileURL(path.join(dist, p)).href);
const { Client } = await load("index.mjs");
const { StdioClientTransport } = await load("stdio.mjs");
const { SkillsClient } = await load("ext/skills/index.mjs");

const client = new Client(
  { name: "skills-client.mjs", version: "1.0.0" },
  opt.era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
);
// The server inherits this environment whole (the SDK passes a few
// variables only by default): a hub's home comes with it.
const transport = new StdioClientTransport({ command: positionals[0], args: positionals.slice(1), env: { ...process.env }, stderr: "inherit" });
try {
  await client.connect(transport);
  const sk = new SkillsClient(client);
  const out = { supported: sk.supported, directoryRead: sk.directoryRead, skills: [] };
  const { skills } = await sk.list();
  for (const skill of skills) {
    const got = await sk.get(skill.uri);
    const entry = { uri: skill.uri, name: skill.frontmatter.name, get: got.skill.uri, files: [] };
    for (const res of skill.resources) {
      const file = await sk.read(skill, res.uri);
      entry.files.push({
        uri: file.uri,
        size: file.bytes.byteLength,
        digest: res.digest,
        sha256: "sha256:" + createHash("sha256").update(file.bytes).digest("hex"),
        verified: file.verified,
      });
    }
    if (sk.directoryRead) {
      const dir = skill.uri.slice(0, -"/SKILL.md".length);
      entry.directory = (await sk.readDirectory(dir)).resources.map((r) => r.uri);
    }
    out.skills.push(entry);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  await client.close();
  process.exit(0);
} catch (err) {
  process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
}
