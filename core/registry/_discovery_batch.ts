/**
 * Discovery of many plugins at once: plugins whose sandboxes would be
 * alike and hold nothing (an empty ceiling grant: no files, commands or
 * network; the same limits and environment) are imported in one process
 * sandbox, each in a worker of its own that reads only its own files. One
 * process start then serves many plugins, and no two plugins ever share a
 * realm.
 *
 * The batches are planned from the whole set of plugins to import, once
 * every one is checked: how many plugins share a process depends on how
 * many there are and on the policy (`discovery_batch`), never on timing.
 *
 * A batch that goes wrong for any plugin (its import failed, or the
 * process died under another plugin) does not decide for it: that plugin
 * is imported again alone, in a sandbox of its own, and that answer counts.
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";
import {
  ISOLATED_WORKERS,
  type ModuleMeta,
  Sandbox,
  sandboxEntryFiles,
  type SandboxEnv,
  type SandboxOptions,
} from "../sandbox/mod.ts";
import type { Grant } from "../tool/mod.ts";
import type { ToolsetSource } from "./catalog.ts";

/** Plugins one batch holds at most when the policy does not say (`discovery_batch`). */
export const DEFAULT_DISCOVERY_BATCH = 64;
/** What a batch's host-side deadline allows for the process's start, beyond its imports. */
const _BOOT_MS = 10_000;
/** Below this many plugins a batch is not split further to use more sandboxes at once. */
const _MIN_SHARE = 8;

/** One plugin to import in a batch. */
export interface BatchItem {
  source: ToolsetSource;
  ceiling: Grant;
  /** Its module files not found in the cache. */
  modules: string[];
  env: SandboxEnv;
  /** Output of its code. */
  onLog: (text: string) => void;
}

/**
 * The batch a plugin's discovery may join, or undefined when it must have
 * a sandbox of its own: worker isolation, any path, command or host in its
 * ceiling (the namespace, subprocesses and connections would be shared),
 * remote imports, a package's modules, or a policy of one plugin a batch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { batchKey } from "./_discovery_batch.ts";
 * const grant = { read: [], write: [], run: [], net: [] };
 * const source = { modules: ["/p/a.ts"], policy: { isolation: "process" } } as never;
 * assert.ok(batchKey(source, grant, { workspace: "/ws", grant }) !== undefined);
 * const reads = { ...grant, read: ["/ws"] };
 * assert.ok(batchKey(source, reads, { workspace: "/ws", grant: reads }) === undefined);
 * // A syscall granted by name: another filter, so another process.
 * const granted = { modules: ["/p/a.ts"], policy: { isolation: "process", allow_syscalls: ["bpf"] } } as never;
 * const env = { workspace: "/ws", grant };
 * assert.notEqual(batchKey(granted, grant, env), batchKey(source, grant, env));
 * ```
 */
export function batchKey(
  source: ToolsetSource,
  ceiling: Grant,
  env: SandboxEnv,
): string | undefined {
  const p: SandboxPolicy = source.policy;
  // Only plugins that hold nothing: a shared namespace mounts every batched plugin's files,
  // and a read grant could reach another's through a symlink, a write grant could plant one.
  const holds = ceiling.read.length + ceiling.write.length + ceiling.run.length +
    ceiling.net.length;
  if (p.isolation !== "process" || holds > 0 || p.discovery_batch === 1) return undefined;
  if (source.imports?.length || !source.modules.every((m) => m.startsWith("/"))) return undefined;
  return JSON.stringify([
    ceiling,
    p.memory_mb,
    p.max_processes,
    p.max_output_bytes,
    p.max_read_bytes,
    p.discovery_timeout_ms,
    p.discovery_batch ?? DEFAULT_DISCOVERY_BATCH,
    p.limits ?? "",
    p.jail ?? "",
    // The second wall: one process, one filter (core/seccomp/).
    p.seccomp ?? "",
    [...p.allow_syscalls ?? []].sort(),
    env.vars ?? {},
  ]);
}

/**
 * `items` (alike: one {@link batchKey}) split into batches: at most the
 * policy's `discovery_batch` plugins each, and spread over `slots`
 * sandboxes at once while each still holds {@link _MIN_SHARE} or more. The
 * plan depends on the count alone, so the work grows with it: N plugins
 * start about N / 64 processes, never one per plugin.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planBatches } from "./_discovery_batch.ts";
 * const item = { source: { policy: {} } } as never;
 * const sizes = (n: number) => planBatches(Array(n).fill(item), 4).map((b) => b.length);
 * assert.deepEqual(sizes(10), [5, 5]);
 * assert.deepEqual(sizes(100), [25, 25, 25, 25]);
 * assert.equal(sizes(1000).length, 16);
 * ```
 */
export function planBatches<T extends { source: ToolsetSource }>(items: T[], slots: number): T[][] {
  if (!items.length) return [];
  const max = Math.max(1, items[0].source.policy.discovery_batch ?? DEFAULT_DISCOVERY_BATCH);
  const share = Math.max(_MIN_SHARE, Math.ceil(items.length / Math.max(1, slots)));
  // As many batches as that takes, each about as large as the others.
  const count = Math.ceil(items.length / Math.min(max, share));
  const size = Math.ceil(items.length / count);
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** What a batch needs from its discovery. */
export interface BatchContext {
  workspace: string;
  /** Output of the process itself (not of one plugin). */
  onLog: (text: string) => void;
  namespace?: (source: ToolsetSource, grant: Grant) => SandboxOptions["namespace"];
  /** What discovery sandboxes share (core/sandbox/sandbox_options.ts `discovery`). */
  discovery?: SandboxOptions["discovery"];
}

/**
 * Import `items` (alike by {@link batchKey}) in one process sandbox, each
 * in a worker of its own; what each declares, or undefined for each that
 * must be imported again alone.
 */
export async function runBatch(
  items: BatchItem[],
  ctx: BatchContext,
): Promise<Array<ModuleMeta[] | undefined>> {
  const first = items[0];
  const pins = Object.assign({}, ...items.map((i) => i.source.pins ?? {}));
  const sb = new Sandbox({
    label: `discovery of ${items.length} plugin${items.length === 1 ? "" : "s"}`,
    grant: first.ceiling,
    modules: items.flatMap((i) => i.modules),
    policy: first.source.policy,
    workspace: ctx.workspace,
    onLog: ctx.onLog,
    namespace: ctx.namespace?.(first.source, first.ceiling),
    pins,
    ...(ctx.discovery ? { discovery: ctx.discovery } : {}),
  });
  try {
    await sb.prepare();
    const entry = await sandboxEntryFiles();
    // The sandbox imports ISOLATED_WORKERS plugins at a time, each within its own limit
    // from its worker's start (it answers a timed-out one itself): the host waits for the
    // batch's turns and the process's start, only as a backstop.
    const turns = Math.ceil(items.length / ISOLATED_WORKERS);
    // The worker reads its own module graph, the entry points and the grant: no other plugin.
    const answers = await sb.loadIsolated(items.map((item) => {
      const own = item.source.pins ? Object.keys(item.source.pins) : item.modules;
      const limit = item.source.policy.discovery_timeout_ms;
      return {
        modules: item.modules,
        env: item.env,
        timeoutMs: limit * turns + _BOOT_MS,
        isolate: { read: [...new Set([...item.ceiling.read, ...entry, ...own])], timeoutMs: limit },
        onLog: item.onLog,
      };
    }));
    return answers.map((a) => items.length > 1 && a.some((m) => m.error) ? undefined : a);
  } catch {
    return items.map(() => undefined);
  } finally {
    await sb.close();
  }
}
