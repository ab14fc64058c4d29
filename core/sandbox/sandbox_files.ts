/**
 * What a sandbox is made of before it starts: the files it may read (the
 * grant's read paths, the entry points' import graph, and its modules'
 * pinned copies) and, for a process sandbox in the namespace, the code
 * files bound read-only, the runtime, and the module set's own Deno cache.
 *
 * @module
 */
import { join } from "node:path";
import { codeStoreDir, INSTALL_DIR } from "../config/mod.ts";
import { isWithin, probeLimits, runtimeFiles } from "../jail/mod.ts";
import type { Grant } from "../tool/mod.ts";
import { CACHE_FORMAT, privateDenoCache } from "./emit_cache.ts";
import { changedPins, pinGraph, type Pins } from "./module_graph.ts";
import { fileStamp, FileStamps, stampedGraph, stampedHash } from "./_file_stamps.ts";
import { type KnownBytes, type PinnedCode, pinnedCode } from "./pinned_code.ts";
import { type DenoNeeds, leanDenoDir } from "./discovery_deno_dir.ts";
import { selfHosted } from "./child_command.ts";
import { sealedRuntimeReady } from "./sealed_runtime.ts";
import { CHILD_ENTRY, type SandboxNamespace, WORKER_ENTRY } from "./_transport.ts";

let _entry: Promise<{ files: string[]; pins: Pins }> | undefined;
let _stamps: FileStamps | undefined;

/** What corral hashed, by file stamp, kept in its code store (./_file_stamps.ts). */
function _stamped(): FileStamps {
  return _stamps ??= new FileStamps(join(codeStoreDir(), "stamps.json"));
}

/** The sandbox entry points' graph and pins: files unchanged since the last start are not read. */
function _entryPins(): Promise<{ files: string[]; pins: Pins }> {
  return _entry ??= stampedGraph([WORKER_ENTRY, CHILD_ENTRY], _stamped());
}

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
export async function sandboxEntryFiles(): Promise<string[]> {
  return (await _entryPins()).files;
}

/** What {@link prepareSandboxFiles} found. */
export interface SandboxFiles {
  /** Every path the sandbox may read. */
  read: string[];
  /** Code files bound read-only in the namespace (empty without it). */
  code: string[];
  /** The namespace with its runtime (absent: none). */
  namespace?: SandboxNamespace;
  /** The pinned copies the sandbox imports (core/sandbox/pinned_code.ts). */
  pinned?: PinnedCode;
  /** Why it may not start: a file changed since it was pinned. */
  refused?: string;
}

let _salt: Promise<string> | undefined;

/** What a module set's folder depends on besides its pins: Deno, corral's lock, the entry points. */
function _storeSalt(): Promise<string> {
  return _salt ??= (async () => {
    const read = (name: string) => stampedHash(join(INSTALL_DIR, name), _stamped());
    const entry = Object.entries((await _entryPins()).pins).sort();
    return JSON.stringify([
      CACHE_FORMAT,
      Deno.version.deno,
      INSTALL_DIR,
      await read("deno.json"),
      await read("deno.lock"),
      entry,
    ]);
  })();
}

/**
 * Compute a sandbox's files: its modules come from their pinned copies
 * (pinned now when discovery did not); for a namespaced process sandbox,
 * the module set's own Deno cache (core/sandbox/emit_cache.ts).
 */
export async function prepareSandboxFiles(o: {
  grant: Grant;
  modules: string[];
  pins?: Pins;
  imports?: string[];
  process: boolean;
  namespace?: Omit<SandboxNamespace, "runtime">;
  /** A discovery sandbox (./sandbox_options.ts `discovery`). */
  discovery?: { needs: DenoNeeds; bytes?: KnownBytes };
}): Promise<SandboxFiles> {
  // A process sandbox starts in limits: their probe (begun by the registry) is awaited here,
  // never run again synchronously at the start.
  const probing = o.process ? probeLimits() : undefined;
  try {
    return await _prepare(o, probing);
  } finally {
    _stamped().save();
  }
}

async function _prepare(
  o: Parameters<typeof prepareSandboxFiles>[0],
  probing: Promise<unknown> | undefined,
): Promise<SandboxFiles> {
  const local = o.modules.filter((m) => m.startsWith("/"));
  const unpinned = local.filter((m) => !o.pins || !(m in o.pins));
  const pins: Pins = { ...(unpinned.length ? await pinGraph(unpinned) : {}), ...o.pins };
  for (const m of o.modules) if (!m.startsWith("/")) pins[m] ??= "specifier";
  // Modules that are not files (npm:, https:; pinned as such by discovery) and their hosts.
  const specifiers = [...new Set([...o.modules, ...Object.keys(pins)])]
    .filter((m) => !m.startsWith("/"));
  const salt = JSON.stringify([await _storeSalt(), o.imports ?? []]);
  const pinned = await pinnedCode(pins, codeStoreDir(), salt, o.discovery?.bytes);
  if (typeof pinned === "string") return { read: [], code: [], refused: pinned };
  const files = [...pinned.paths.values()].filter((p) => p.startsWith("/"));
  const code = [...(await sandboxEntryFiles()), ...files];
  const read = [...o.grant.read, ...code];
  await probing;
  if (!o.process || !o.namespace) return { read, code: [], pinned };
  const runtime = await runtimeFiles();
  await sealedRuntimeReady(); // its execute-only copy, being made ahead (./sealed_runtime.ts)
  const lean = await _leanFiles(o, pins, pinned, code, read, runtime);
  if (lean) return lean;
  // A compiled binary cannot run `deno info`/`deno install`: it keeps Deno's cache as it is.
  let own;
  try {
    own = selfHosted() ? undefined : await privateDenoCache({
      dir: pinned.dir,
      files: code,
      specifiers,
      shared: runtime.denoDir,
      imports: o.imports,
    });
  } catch (err) {
    // Never the host's shared cache instead: it holds every other set's compiled code.
    return { read: [], code: [], refused: _noPrivateCache(pinned.dir, err as Error) };
  }
  const lock = join(INSTALL_DIR, "deno.lock");
  return {
    read,
    code: [
      ...code.filter((f) => !isWithin(f, pinned.dir)),
      join(INSTALL_DIR, "deno.json"),
      ...(own ? [] : [lock]),
    ],
    pinned,
    namespace: {
      ...o.namespace,
      // Inside, corral's deno.lock is the set's own, narrowed to its packages.
      runtime: own
        ? { ...runtime, denoDir: own.denoDir, own: [[pinned.dir, pinned.dir], [own.lock, lock]] }
        : runtime,
    },
  };
}

/**
 * A discovery sandbox's files with a lean Deno cache (./discovery_deno_dir.ts):
 * the npm packages its graph imports bound from the host's cache, none of
 * its own made; undefined when its graph needs more (then the full one).
 */
async function _leanFiles(
  o: Parameters<typeof prepareSandboxFiles>[0],
  pins: Pins,
  pinned: PinnedCode,
  code: string[],
  read: string[],
  runtime: Awaited<ReturnType<typeof runtimeFiles>>,
): Promise<SandboxFiles | undefined> {
  if (!o.discovery || !o.namespace || selfHosted()) return undefined;
  // A module that is no file (a remote or npm: package plugin) is in no file's graph: the full one.
  if (Object.keys(pins).some((m) => m[0] !== "/")) return undefined;
  const graph = [...(await sandboxEntryFiles()), ...Object.keys(pins).filter((f) => f[0] === "/")];
  const packages = await o.discovery.needs.packagesOf(graph, runtime.denoDir);
  if (!packages) return undefined;
  const g = o.grant;
  // Its own writable cache only where nothing in it may write: no files, commands or network.
  const holds = g.read.length + g.write.length + g.run.length + g.net.length > 0;
  const lean = await leanDenoDir(packages, runtime.denoDir, codeStoreDir(), !holds);
  const lock = join(INSTALL_DIR, "deno.lock");
  // corral's own code is imported in place: a set of it alone has no copies to bind.
  const copies = [...pinned.paths.values()].some((p) => isWithin(p, pinned.dir));
  return {
    read,
    code: [...code.filter((f) => !isWithin(f, pinned.dir)), join(INSTALL_DIR, "deno.json")],
    pinned,
    namespace: {
      ...o.namespace,
      runtime: {
        ...runtime,
        denoDir: lean.denoDir,
        scratchDenoDir: lean.scratch,
        env: lean.env,
        own: [...(copies ? [[pinned.dir, pinned.dir]] : []), [lean.lock, lock], ...lean.binds] as [
          string,
          string,
        ][],
      },
    },
  };
}

/** Why a namespaced sandbox is refused when its module set's own Deno cache cannot be made. */
function _noPrivateCache(dir: string, err: Error): string {
  return `not started: cannot make the module set's own Deno cache in ${dir} (${err.message}); ` +
    `a namespaced sandbox never uses the host's shared Deno cache: start corral with write ` +
    `access to its code store (--allow-write, or CORRAL_CACHE_DIR set to a writable folder)`;
}

/**
 * Why a sandbox may not start because its module files changed since
 * discovery pinned them, or undefined.
 */
export async function pinsRefusal(pins: Pins | undefined): Promise<string | undefined> {
  if (!pins) return undefined;
  // A file whose stamp is the one it had when corral last hashed it to this pin is unchanged.
  const stamps = _stamped();
  const unsure = Object.fromEntries(
    Object.entries(pins).filter(([file, hash]) => stamps.known(file)?.hash !== hash),
  );
  const before = new Map(Object.keys(unsure).map((f) => [f, fileStamp(f)])); // stamped, then read
  const changed = await changedPins(unsure);
  for (const [file, hash] of Object.entries(unsure)) {
    if (!file.startsWith("/") || changed.includes(file)) continue;
    stamps.remember(file, hash, undefined, before.get(file));
  }
  stamps.save();
  if (changed.length === 0) return undefined;
  return `not started: ${changed.map((f) => `"${f}"`).join(", ")} changed since corral ` +
    `checked ${changed.length > 1 ? "them" : "it"} at discovery (restart corral, or run ` +
    `it with --watch, to check the new version)`;
}
