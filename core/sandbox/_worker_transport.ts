/**
 * Worker isolation: the sandbox is a Web Worker in the host process, with
 * Deno permissions narrowed to the grant (every key listed: read, write,
 * run, net, import; env, ffi and sys never). Fast, but it shares the host's
 * memory and threads: a worker cannot be capped in memory nor stopped in a
 * busy loop (see docs/security.md).
 *
 * @module
 */
import type { SandboxMessage } from "./protocol.ts";
import {
  type Transport,
  type TransportHooks,
  type TransportSpec,
  WORKER_ENTRY,
} from "./_transport.ts";

/** Start a permissioned worker for `spec`. */
export function startWorker(spec: TransportSpec, hooks: TransportHooks): Transport {
  const g = spec.grant;
  const list = (l: string[]) => l.includes("*") ? true : l.length ? [...new Set(l)] : false;
  const worker = new Worker(new URL(WORKER_ENTRY, "file:///"), {
    type: "module",
    deno: {
      permissions: {
        read: list(spec.read),
        write: list(g.write),
        run: list(g.run),
        net: list(g.net),
        env: false,
        ffi: false,
        sys: false,
        import: list(spec.imports),
      },
    },
  });
  worker.onmessage = (e: MessageEvent<SandboxMessage>) => hooks.onMessage(e.data);
  worker.onmessageerror = () => hooks.onLog("dropped an unreadable message");
  worker.onerror = (e) => {
    e.preventDefault();
    hooks.onExit(`crashed: ${e.message}`);
  };
  return {
    send: (msg) => worker.postMessage(msg),
    kill: () => worker.terminate(),
  };
}
