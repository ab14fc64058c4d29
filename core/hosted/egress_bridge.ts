/**
 * The first process inside a hosted server's namespace when it holds `n`:
 * it bridges `127.0.0.1:3128` to the host's egress proxy socket (the only
 * way out of the namespace), then runs the server with the same stdio and
 * exits with it. Run as `deno run bridge.ts SOCKET -- COMMAND ARGS…`.
 * It imports only the bridge itself (../guard/egress_env.ts, which imports
 * nothing): both run inside the sandbox.
 *
 * @module
 */
import { bridgeEgress } from "../guard/egress_env.ts";

const [socket, sep, command, ...args] = Deno.args;
if (sep !== "--" || !socket || !command) {
  console.error("usage: egress_bridge.ts SOCKET -- COMMAND ARGS...");
  Deno.exit(2);
}
bridgeEgress(socket);

const child = new Deno.Command(command, {
  args,
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
const status = await child.status;
Deno.exit(status.code);
