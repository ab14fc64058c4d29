/**
 * Discovery of many plugins at once: plugins whose sandboxes would be
 * alike and hold nothing (an empty ceiling grant: no files, commands or
 * network; the same limits and environment) are imported in one process
 * sandbox, each in a worker of its own that reads only its own files. One process start then serves many
 * plugins, and no two plugins ever share a realm.
 *
 * A batch that goes wrong for any plugin (its import failed, or the
 * process died under another plugin) does not decide for it: that plugin
 * is imported again alone, in a sandbox of its own, and that answer counts.
 *
 * @module
 */
import type { SandboxPolicy } from "../config/policy.ts";
import type { ModuleMeta, SandboxEnv } from "../sandbox/protocol.ts";
import { Sandbox, type SandboxOptions } from "../sandbox/sandbox.ts";
import { sandboxEntryFiles } from "../sandbox/sandbox_files.ts";
import type { Grant } from "../tool/tool.ts";
import type { ToolsetSource } from "./catalog.ts";

/** Plugins imported by one process sandbox at most. */
const _BATCH_MAX = 64;
/** How long a batch waits at most for the plugins being checked at the same time to join it. */
const _GATHER_MS = 200;

/** One plugin waiting for its batch. */
export interface BatchItem {
  source: ToolsetSource;
  ceiling: Grant;
  /** Its module files not found in the cache. */
  modules: string[];
  env: SandboxEnv;
  /** Output of its code. */
  onLog: (text: string) => void;
  /** What it declares, or undefined: import it again alone. */
  resolve(metas: ModuleMeta[] | undefined): void;
}

/**
 * The batch a plugin's discovery may join, or undefined when it must have
 * a sandbox of its own: worker isolation, any path, command or host in its
 * ceiling (the namespace, subprocesses and connections would be shared),
 * remote imports, or a package's modules.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { batchKey } from "./discovery_batch.ts";
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
  if (p.isolation !== "process" || holds > 0) return undefined;
  if (source.imports?.length || !source.modules.every((m) => m.startsWith("/"))) return undefined;
  return JSON.stringify([
    ceiling,
    p.memory_mb,
    p.max_processes,
    p.max_output_bytes,
    p.max_read_bytes,
    p.discovery_timeout_ms,
    p.limits ?? "",
    p.jail ?? "",
    // The second wall: one process, one filter (core/seccomp/).
    p.seccomp ?? "",
    [...p.allow_syscalls ?? []].sort(),
    env.vars ?? {},
  ]);
}

/** What a batch needs from its discovery. */
export interface BatchContext {
  workspace: string;
  /** Output of the process itself (not of one plugin). */
  onLog: (text: string) => void;
  namespace?: (source: ToolsetSource, grant: Grant) => SandboxOptions["namespace"];
}

/**
 * Import `items` (alike by {@link batchKey}) in one process sandbox, each
 * in a worker of its own, and resolve each item.
 */
export async function runBatch(items: BatchItem[], ctx: BatchContext): Promise<void> {
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
  });
  try {
    await sb.prepare();
    const entry = await sandboxEntryFiles();
    // The worker reads its own module graph, the entry points and the grant: no other plugin.
    const answers = await sb.loadIsolated(items.map((item) => {
      const own = item.source.pins ? Object.keys(item.source.pins) : item.modules;
      return {
        modules: item.modules,
        env: item.env,
        timeoutMs: item.source.policy.discovery_timeout_ms,
        isolate: { read: [...new Set([...item.ceiling.read, ...entry, ...own])] },
        onLog: item.onLog,
      };
    }));
    items.forEach((item, i) =>
      item.resolve(items.length > 1 && answers[i].some((m) => m.error) ? undefined : answers[i])
    );
  } catch {
    for (const item of items) item.resolve(undefined);
  } finally {
    await sb.close();
  }
}

/**
 * Gathers the plugins being discovered at the same time into batches by
 * key, and runs each batch when `slot` grants one.
 */
export class Batcher {
  readonly #queues = new Map<string, BatchItem[]>();
  readonly #slot: () => Promise<() => void>;
  readonly #ctx: BatchContext;
  /** Sources being checked (pins, cache) that may still join a batch. */
  #checking = 0;
  #settled: Array<() => void> = [];

  constructor(slot: () => Promise<() => void>, ctx: BatchContext) {
    this.#slot = slot;
    this.#ctx = ctx;
  }

  /** A source is being checked: a batch waits for it (up to a moment) before it starts. */
  checking(): () => void {
    this.#checking++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--this.#checking === 0) { for (const r of this.#settled.splice(0)) r(); }
    };
  }

  /** What `item` declares, or undefined: import it alone. */
  add(key: string, item: Omit<BatchItem, "resolve">): Promise<ModuleMeta[] | undefined> {
    return new Promise((resolve) => {
      let queue = this.#queues.get(key);
      if (!queue) this.#queues.set(key, queue = []);
      queue.push({ ...item, resolve });
      if (queue.length === 1) void this.#pump(key);
    });
  }

  async #pump(key: string): Promise<void> {
    const release = await this.#slot();
    if (this.#checking > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((r) => this.#settled.push(r)),
        new Promise<void>((r) => timer = setTimeout(r, _GATHER_MS)),
      ]);
      clearTimeout(timer);
    }
    const queue = this.#queues.get(key) ?? [];
    const items = queue.splice(0, _BATCH_MAX);
    if (queue.length) void this.#pump(key);
    else this.#queues.delete(key);
    try {
      if (items.length) await runBatch(items, this.#ctx);
    } finally {
      release();
    }
  }
}
