/**
 * Entry point of a process sandbox: a child `deno run` whose flags are the
 * grant. It reads a secret frame token from the first line of stdin (before
 * any tool code exists), starts the permissioned sandbox worker, and relays
 * messages: stdin lines → worker, worker messages → framed stdout lines.
 * Tool code shares stdout but never learns the token, so it cannot forge a
 * protocol line.
 *
 * Before the worker (and so any tool code) exists, the child drops with
 * `Deno.permissions.revoke` every permission kind the grant does not use
 * (env, sys, ffi, import always; write, run, net when empty). Under
 * `deno run` its flags already are the grant; in a compiled corral binary
 * (which re-runs itself as `corral __sandbox-child`, with the permissions
 * fixed at compile time) this is what takes the broad grant away. Deno can
 * only revoke whole kinds or single paths, not "all but these paths": the
 * worker inside then narrows to the exact lists. The first frame it sends,
 * `ready`, says what the process still holds (`held`).
 *
 * @module
 */
import { EGRESS_LISTEN } from "../guard/egress_env.ts";
import { FRAME_MARK, type SandboxMessage } from "./protocol.ts";

interface _Init {
  read: string[];
  write: string[];
  run: string[];
  net: string[];
  /** Hosts remote modules may be imported from (from the cache only). */
  import?: string[];
  /** The egress proxy's socket: bridge 127.0.0.1:3128 to it (see core/guard/egress.ts). */
  egress?: string;
}

const _encoder = new TextEncoder();

async function* _lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, nl);
      buf = buf.slice(nl + 1);
    }
  }
  if (buf) yield buf;
}

function _bridge(socket: string): void {
  const listener = Deno.listen(EGRESS_LISTEN);
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
}

async function _relay(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable, { preventClose: true });
  } catch { /* closed */ }
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* closed */ }
}

const _KINDS = ["read", "write", "run", "net", "env", "sys", "ffi", "import"] as const;

/** Revoke every kind the grant does not use; return the state of each kind. */
async function _drop(init: _Init): Promise<Record<string, string>> {
  const keep = new Set<string>(["read"]);
  // The egress bridge connects to a unix socket: that needs write (of the socket only).
  if (init.write.length || init.egress) keep.add("write");
  if (init.run.length) keep.add("run");
  if (init.net.length) keep.add("net");
  if (init.import?.length) keep.add("import");
  const held: Record<string, string> = {};
  for (const name of _KINDS) {
    const desc = { name } as Deno.PermissionDescriptor;
    try {
      if (!keep.has(name)) await Deno.permissions.revoke(desc);
      held[name] = Deno.permissions.querySync(desc).state;
    } catch (err) {
      held[name] = `unknown: ${(err as Error).message}`;
    }
  }
  return held;
}

/**
 * Run the sandbox child on this process's stdin/stdout; never returns (the
 * process exits when the host closes stdin).
 *
 * @example
 * ```ts ignore
 * import { runSandboxChild } from "./sandbox_child.ts";
 * if (Deno.args[0] === "__sandbox-child") await runSandboxChild();
 * ```
 */
export async function runSandboxChild(): Promise<void> {
  const lines = _lines(Deno.stdin.readable);
  const token = (await lines.next()).value as string;
  const init = JSON.parse((await lines.next()).value as string) as _Init;
  // The way out of the namespace, before any tool code exists: a TCP port on
  // the namespace's own loopback, relayed to the host's egress proxy.
  if (init.egress) _bridge(init.egress);
  const held = await _drop(init);
  const list = (l: string[]) => l.includes("*") ? true : l.length ? l : false;
  const worker = new Worker(new URL("./sandbox_worker.ts", import.meta.url), {
    type: "module",
    deno: {
      permissions: {
        read: list(init.read),
        write: list(init.write),
        run: list(init.run),
        net: list(init.net),
        env: false,
        ffi: false,
        sys: false,
        import: list(init.import ?? []),
      },
    },
  });
  const out = (msg: SandboxMessage) =>
    Deno.stdout.writeSync(_encoder.encode(`${FRAME_MARK}${token}${JSON.stringify(msg)}\n`));
  worker.onmessage = (e: MessageEvent<SandboxMessage>) =>
    out(e.data.type === "ready" ? { ...e.data, held } : e.data);
  worker.onerror = (e) => {
    // The worker handles its own errors; one that reaches here means it is dead.
    e.preventDefault();
    console.error(`error: sandbox worker failed: ${e.message}`);
    Deno.exit(70);
  };
  for await (const line of lines) {
    if (!line) continue;
    try {
      worker.postMessage(JSON.parse(line));
    } catch {
      out({ type: "log", text: "sandbox: dropped a malformed host message" });
    }
  }
  // The host closed stdin: end the sandbox.
  worker.terminate();
  Deno.exit(0);
}

if (import.meta.main) await runSandboxChild();
