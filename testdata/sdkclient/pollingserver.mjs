#!/usr/bin/env node
// pollingserver.mjs is an MCP server over Streamable HTTP made with the
// official TypeScript SDK (@modelcontextprotocol/sdk, installed by
// `npm install --prefix testdata/npm-test`) that polls, as SEP-1699 lets a
// server do (2025-11-25, basic/transports, "Resumability and
// Redelivery"): its tool test_reconnection, the one the conformance
// suite's server-sse-polling scenario calls, closes the answer stream of
// the call before answering (the SDK's closeSSEStream), and the answer is
// redelivered from its event store to the GET with Last-Event-ID that
// resumes it, after the retry time its priming event names.
//
//   node pollingserver.mjs [--retry 200]
//
// It listens on a free loopback port and prints "listening URL".

import http from "node:http";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { openSDK } from "./sdk.mjs";

const { opt } = await openSDK("pollingserver.mjs", { retry: { type: "string", default: "200" } }, []);
const esm = path.join(opt.sdk, "dist", "esm");
const load = (p) => import(pathToFileURL(path.join(esm, p)).href);
const { McpServer } = await load("server/mcp.js");
const { StreamableHTTPServerTransport } = await load("server/streamableHttp.js");
const { InMemoryEventStore } = await load("examples/shared/inMemoryEventStore.js");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const newServer = () => {
  const server = new McpServer({ name: "polling-server", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.tool("test_reconnection", "Closes the answer stream mid-call; the answer comes on the resumed stream", {}, async (_args, extra) => {
    await sleep(50);
    // Only a client of 2025-11-25 or later can resume (the SDK offers
    // closeSSEStream to no other): an older one gets the answer as usual.
    extra.closeSSEStream?.();
    await sleep(100); // the answer is stored while the client is away
    return { content: [{ type: "text", text: "Reconnection test completed successfully" }] };
  });
  return server;
};

const eventStore = new InMemoryEventStore();
const sessions = new Map();
const httpServer = http.createServer(async (req, res) => {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (sid && !transport) {
    res.writeHead(404, { "Content-Type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
    return;
  }
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore,
      retryInterval: Number(opt.retry),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});
httpServer.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening http://127.0.0.1:${httpServer.address().port}/mcp\n`);
});
