/**
 * A host started with narrower Deno flags (`deno run --allow-read
 * --allow-env main.ts`) cannot start process sandboxes: it may run no
 * program. Its toolsets then fall back to the strongest isolation it can
 * give, a Web Worker narrowed to the grant, and say so (`corral list`, the
 * banner). What a worker cannot protect stays refused (core/registry/
 * catalog.ts `confine`): only corral's own read-only tools, which check
 * every path they open, run with files there; a plugin holding files, or a
 * tool that writes or runs programs, needs the namespace.
 *
 * @module
 */
import type { ToolsetSource } from "./catalog.ts";

/**
 * `source` as this host can run it: unchanged, or, when `missing` says why
 * no process sandbox can start, in a worker with that reason.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostFallback } from "./host_fallback.ts";
 * const source = { id: "files", kind: "builtin", modules: [], policy: { isolation: "process" } } as never;
 * assert.equal(hostFallback(source, undefined), source);
 * const s = hostFallback(source, "no --allow-run");
 * assert.ok(s.policy.isolation === "worker" && s.policy.fallback === "no --allow-run");
 * ```
 */
export function hostFallback(source: ToolsetSource, missing: string | undefined): ToolsetSource {
  // A hosted server is a program: it has no worker to fall back to (its start says why).
  if (!missing || source.policy.isolation !== "process" || source.kind === "server") return source;
  return { ...source, policy: { ...source.policy, isolation: "worker", fallback: missing } };
}
