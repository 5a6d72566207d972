// listenfd.cjs, preloaded (node --require) into a server that listens on
// a port of its own choosing (server-everything's PORT), makes the
// server's first listen use the socket the test passed as file descriptor
// 3 instead (cmd/dynamic-mcp's startListening): a port the test made and
// the child alone holds, so that no other process can take it first or
// answer the test's readiness check in the child's place.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
let fd = 3;
net.Server.prototype.listen = function (...args) {
  if (fd === undefined) return listen.apply(this, args);
  const handle = { fd };
  fd = undefined;
  const done = args.find((a) => typeof a === "function");
  return done ? listen.call(this, handle, done) : listen.call(this, handle);
};
