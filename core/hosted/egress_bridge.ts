/**
 * The first process inside a hosted server's namespace when it holds `n`:
 * it bridges `127.0.0.1:3128` to the host's egress proxy socket (the only
 * way out of the namespace), then runs the server with the same stdio and
 * exits with it. Run as `deno run bridge.ts SOCKET -- COMMAND ARGS…`.
 * It imports nothing: it runs inside the sandbox.
 *
 * @module
 */
const [socket, sep, command, ...args] = Deno.args;
if (sep !== "--" || !socket || !command) {
  console.error("usage: egress_bridge.ts SOCKET -- COMMAND ARGS...");
  Deno.exit(2);
}
const listener = Deno.listen({ hostname: "127.0.0.1", port: 3128 });
(async () => {
  for await (const conn of listener) {
    (async () => {
      let up: Deno.Conn | undefined;
      try {
        up = await Deno.connect({ transport: "unix", path: socket });
        await Promise.all([_relay(conn, up), _relay(up, conn)]);
      } catch { /* either side gone */ }
      for (const c of [conn, up]) {
        try {
          c?.close();
        } catch { /* closed */ }
      }
    })();
  }
})().catch(() => {});

async function _relay(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable, { preventClose: true });
  } catch { /* closed */ }
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* closed */ }
}

const child = new Deno.Command(command, {
  args,
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
const status = await child.status;
Deno.exit(status.code);
