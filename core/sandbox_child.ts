/**
 * Entry point of a process sandbox: a child `deno run` whose flags are the
 * grant. It reads a secret frame token from the first line of stdin (before
 * any tool code exists), starts the permissioned sandbox worker, and relays
 * messages: stdin lines → worker, worker messages → framed stdout lines.
 * Tool code shares stdout but never learns the token, so it cannot forge a
 * protocol line.
 *
 * @module
 */
import { FRAME_MARK, type SandboxMessage } from "./protocol.ts";

interface _Init {
  read: string[];
  write: string[];
  run: string[];
  net: string[];
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

async function _main(): Promise<void> {
  const lines = _lines(Deno.stdin.readable);
  const token = (await lines.next()).value as string;
  const init = JSON.parse((await lines.next()).value as string) as _Init;
  const list = (l: string[]) => l.length ? l : false;
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
        import: false,
      },
    },
  });
  const out = (msg: SandboxMessage) =>
    Deno.stdout.writeSync(_encoder.encode(`${FRAME_MARK}${token}${JSON.stringify(msg)}\n`));
  worker.onmessage = (e: MessageEvent<SandboxMessage>) => out(e.data);
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

await _main();
