/**
 * The first process inside a hosted server's namespace when it holds `n`:
 * it bridges `127.0.0.1:3128` to the host's egress proxy socket (the only
 * way out of the namespace), listens for the forwarders of its `host:port`
 * grants and answers their names (../egress/forward_bridge.ts), then runs
 * the server with the same stdio and exits with it. Run as
 * `deno run bridge.ts SOCKET FORWARDS_JSON -- COMMAND ARGS…`, or in a
 * compiled corral as `corral __egress-bridge SOCKET FORWARDS_JSON -- …`
 * (core/base/self_run.ts).
 * It loads only the bridges themselves (../guard/egress_env.ts,
 * ../egress/forward_bridge.ts and ../egress/egress_forward.ts, which import
 * nothing else), by name and lazily, not through their folders' faces: they
 * run inside the sandbox, which binds just those files
 * (tests/architecture_test.ts checks it).
 *
 * @module
 */
/** A forwarder (../egress/egress_forward.ts), named by type only. */
type Forward = import("../egress/egress_forward.ts").Forward;

/**
 * Bridge, then run `COMMAND ARGS…` of `argv` (`SOCKET FORWARDS_JSON --
 * COMMAND ARGS…`) with the same stdio; resolves with its exit code.
 */
export async function runEgressBridge(argv: string[]): Promise<number> {
  const [socket, forwardsJson, sep, command, ...args] = argv;
  if (sep !== "--" || !socket || !command) {
    console.error("usage: egress_bridge.ts SOCKET FORWARDS_JSON -- COMMAND ARGS...");
    return 2;
  }
  const { bridgeEgress } = await import("../guard/egress_env.ts");
  const { bridgeForwards, serveNames } = await import("../egress/forward_bridge.ts");
  bridgeEgress(socket);
  const forwards = JSON.parse(forwardsJson) as Forward[];
  if (forwards.length) {
    // Every forwarder listens before the server starts: none of its own can take the port.
    bridgeForwards(socket, forwards);
    await serveNames(forwards).catch(() => {});
  }
  const child = new Deno.Command(command, {
    args,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await runEgressBridge(Deno.args));
