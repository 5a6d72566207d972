// listenfd.cjs, preloaded (node --require) into a server that listens on
// a port of its own choosing (server-everything's PORT), makes the
// server's first listen use the socket the test passed as file descriptor
// 3 instead (cmd/dynamic-mcp's startListening): a port the test made and
// the child alone holds, so that no other process can take it first or
// answer the test's readiness check in the child's place.
//
// An HTTP server's idle kept-alive connections are left to the client to
// close (keepAliveTimeout 0: no timer, no Keep-Alive hint): Node closes
// them after 5 s, undici reuses one until shortly before that, and on a
// loaded machine, where either event loop runs late, a request can go out
// on a connection the server has just closed, which undici reports as
// "other side closed" and does not retry (a POST). The hub's own HTTP
// face keeps idle connections for 2 minutes.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
let fd = 3;
net.Server.prototype.listen = function (...args) {
  if (fd === undefined) return listen.apply(this, args);
  const handle = { fd };
  fd = undefined;
  if ("keepAliveTimeout" in this) this.keepAliveTimeout = 0;
  const done = args.find((a) => typeof a === "function");
  return done ? listen.call(this, handle, done) : listen.call(this, handle);
};
