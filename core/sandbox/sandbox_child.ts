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
import { FRAME_MARK, type SandboxMessage } from "./protocol.ts";

interface _Init {
  read: string[];
  write: string[];
  run: string[];
  net: string[];
  /** Hosts remote modules may be imported from (from the cache only). */
  import?: string[];
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

const _KINDS = ["read", "write", "run", "net", "env", "sys", "ffi", "import"] as const;

/** Revoke every kind the grant does not use; return the state of each kind. */
async function _drop(init: _Init): Promise<Record<string, string>> {
  const keep = new Set<string>(["read"]);
  if (init.write.length) keep.add("write");
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
