// Preloaded into the test servers (node --require): every server in the process
// listens on 127.0.0.1 only, whatever host its code asks for (the everything
// server's express app listens on all interfaces).
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = Number(args[0]);
  if (Number.isInteger(port) && (args.length < 2 || typeof args[1] !== "string")) {
    return listen.call(this, port, "127.0.0.1", ...args.slice(1));
  }
  return listen.apply(this, args);
};
