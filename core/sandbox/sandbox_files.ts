/**
 * What a sandbox is made of before it starts: the files it may read (the
 * grant's read paths, the entry points' and its modules' import graphs, the
 * pinned files when discovery pinned them) and, for a process sandbox in
 * the namespace, the code files bound read-only, the runtime, and Deno's
 * emit cache filled for them.
 *
 * @module
 */
import { join } from "node:path";
import { INSTALL_DIR } from "../config/install_dir.ts";
import { runtimeFiles } from "../guard/namespace.ts";
import type { Grant } from "../tool/tool.ts";
import { warmEmitCache } from "./emit_cache.ts";
import { changedPins, localModuleGraph, type Pins } from "./module_graph.ts";
import { selfHosted } from "./process_transport.ts";
import { CHILD_ENTRY, type SandboxNamespace, WORKER_ENTRY } from "./transport.ts";

let _entryGraph: Promise<string[]> | undefined;

/**
 * The files the sandbox entry points import (read access for the sandbox).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sandboxEntryFiles } from "./sandbox_files.ts";
 * assert.ok((await sandboxEntryFiles()).some((f) => f.endsWith("sandbox_worker.ts")));
 * ```
 */
export function sandboxEntryFiles(): Promise<string[]> {
  return _entryGraph ??= localModuleGraph([WORKER_ENTRY, CHILD_ENTRY]);
}

/** What {@link prepareSandboxFiles} found. */
export interface SandboxFiles {
  /** Every path the sandbox may read. */
  read: string[];
  /** Code files bound read-only in the namespace (empty without it). */
  code: string[];
  /** The namespace with its runtime (absent: none). */
  namespace?: SandboxNamespace;
}

/** Compute a sandbox's files; for a namespaced process sandbox, fill Deno's emit cache. */
export async function prepareSandboxFiles(o: {
  grant: Grant;
  modules: string[];
  pins?: Pins;
  process: boolean;
  namespace?: Omit<SandboxNamespace, "runtime">;
}): Promise<SandboxFiles> {
  const modules = o.pins ? Object.keys(o.pins) : await localModuleGraph(o.modules);
  const code = [...(await sandboxEntryFiles()), ...modules];
  const read = [...o.grant.read, ...code];
  if (!o.process || !o.namespace) return { read, code: [] };
  const runtime = await runtimeFiles();
  if (!selfHosted()) await warmEmitCache(code, runtime.denoDir);
  return {
    read,
    code: [...code, join(INSTALL_DIR, "deno.json"), join(INSTALL_DIR, "deno.lock")],
    namespace: { ...o.namespace, runtime },
  };
}

/**
 * Why a sandbox may not start because its module files changed since
 * discovery pinned them, or undefined.
 */
export async function pinsRefusal(pins: Pins | undefined): Promise<string | undefined> {
  if (!pins) return undefined;
  const changed = await changedPins(pins);
  if (changed.length === 0) return undefined;
  return `not started: ${changed.map((f) => `"${f}"`).join(", ")} changed since corral ` +
    `checked ${changed.length > 1 ? "them" : "it"} at discovery (restart corral, or run ` +
    `it with --watch, to check the new version)`;
}
