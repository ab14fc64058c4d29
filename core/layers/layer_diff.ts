/**
 * What changed in one upper layer since it was last settled: each entry
 * whose signature differs from the last walk's becomes an operation on the
 * tree (write a file, make a folder or a link, remove a path, prune what an
 * opaque folder hides), and an entry that vanished (the tool removed a path
 * that existed only in its layer, after corral had applied it) becomes a
 * removal.
 *
 * The layer is read as a stream (./upper_stream.ts) and counted against
 * its quota (./layer_quota.ts) as it is read; only the changed entries are
 * kept, and they become operations a batch at a time ({@link opsOf}), so
 * the host's memory follows the changes, not the layer.
 *
 * @module
 */
import { join } from "node:path";
import { lowerSig, type Sig } from "./tree_sig.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import { layerQuota, QuotaCount } from "./layer_quota.ts";
import { streamUpper } from "./upper_stream.ts";
import { opaqueFolders, type UpperEntry } from "./upper_walk.ts";

/** One operation on the tree. */
export interface LayerOp {
  /** Relative to the write root, `/`-separated. */
  rel: string;
  /** The path in the tree. */
  abs: string;
  /** The path in the upper layer. */
  upper: string;
  kind: "write" | "dir" | "symlink" | "remove" | "prune" | "other";
  entry?: UpperEntry;
  /** A removal because the entry left the layer (not a whiteout). */
  vanished?: boolean;
  /** What the tree held at `abs` when its batch was read (./apply_batch.ts), when known. */
  now?: Sig | null;
}

/** The state a layer's walks keep: signatures seen, folders found opaque (by inode). */
export interface LayerMemory {
  seen: Map<string, string>;
  opaque: Map<string, { ino: number; opaque: boolean }>;
}

/** A new, empty memory. */
export function layerMemory(): LayerMemory {
  return { seen: new Map(), opaque: new Map() };
}

/** One read of a layer: what changed since `memory`, and what the layer holds. */
export interface LayerScan {
  /** Changed entries that are not removals, parents before children. */
  changed: UpperEntry[];
  /** Removals (whiteouts, and entries that left the layer), deepest first. */
  removals: LayerOp[];
  /** How many of `changed` lie within the quota (all of them unless it is passed). */
  within: number;
  /** How many of `removals` lie within the quota. */
  removalsWithin: number;
  /** The layer's count against its quota (`over` set when it was passed). */
  count: QuotaCount;
  /** Paths of the layer whose names are not UTF-8 (bytes, relative), never in `changed`. */
  badNames: Uint8Array[];
}

/**
 * Read the layer of `layer` against `memory` (which is not changed: the
 * caller commits each settled entry with {@link commitSeen}).
 */
export async function scanLayer(
  layer: LayerRoot,
  memory: LayerMemory,
  artifacts: ReadonlySet<string>,
  count = new QuotaCount(layerQuota()),
): Promise<LayerScan> {
  const upper = join(layer.dir, "u");
  const scan: LayerScan = {
    changed: [],
    removals: [],
    within: -1,
    removalsWithin: -1,
    count,
    badNames: [],
  };
  const whiteouts: Array<{ e: UpperEntry; over: boolean }> = [];
  let held = 0;
  for await (
    const chunk of streamUpper(upper, {
      onBadName: (b) => void (scan.badNames.length < 1000 && scan.badNames.push(b)),
    })
  ) {
    for (const e of chunk) {
      const over = count.add(e.kind === "file" ? e.size : 0);
      const was = memory.seen.get(e.rel);
      if (was !== undefined) held++;
      if (was === _sig(e) || (artifacts.size && artifacts.has(join(layer.root, e.rel)))) continue;
      if (over && scan.within < 0) scan.within = scan.changed.length;
      if (e.kind === "whiteout") whiteouts.push({ e, over });
      else scan.changed.push(e);
    }
  }
  if (scan.within < 0) scan.within = scan.changed.length;
  const removals = whiteouts.map(({ e, over }) => ({ op: _op(layer, e, "remove"), over }));
  // Something the last walk saw is gone from the layer: removals too.
  if (held < memory.seen.size) {
    const now = new Set<string>();
    for await (const chunk of streamUpper(upper)) for (const e of chunk) now.add(e.rel);
    for (const rel of memory.seen.keys()) {
      if (now.has(rel)) continue;
      const op: LayerOp = {
        rel,
        abs: join(layer.root, rel),
        upper: join(upper, rel),
        kind: "remove",
      };
      removals.push({ op: { ...op, vanished: true }, over: count.over !== undefined });
    }
  }
  // Deepest first, so a folder's removal comes after its contents'; past the quota last.
  const depth = (o: LayerOp) => o.rel.split("/").length;
  removals.sort((a, b) => Number(a.over) - Number(b.over) || depth(b.op) - depth(a.op));
  scan.removals = removals.map((r) => r.op);
  scan.removalsWithin = removals.filter((r) => !r.over).length;
  return scan;
}

/** The operations of a batch of changed entries (not removals), in their order. */
export async function opsOf(
  layer: LayerRoot,
  entries: UpperEntry[],
  memory: LayerMemory,
): Promise<LayerOp[]> {
  const opaque = await _opaque(join(layer.dir, "u"), layer.root, entries, memory);
  const ops: LayerOp[] = [];
  for (const e of entries) {
    if (e.kind === "file") ops.push(_op(layer, e, "write"));
    else if (e.kind === "symlink") ops.push(_op(layer, e, "symlink"));
    else if (e.kind === "dir") {
      ops.push(_op(layer, e, "dir"));
      if (opaque.has(e.rel)) ops.push(_op(layer, e, "prune"));
    } else ops.push(_op(layer, e, "other"));
  }
  return ops;
}

/** Record that `entries` were settled (whatever became of them). */
export function commitSeen(memory: LayerMemory, entries: UpperEntry[]): void {
  for (const e of entries) memory.seen.set(e.rel, _sig(e));
}

/** Record that `removals` were settled (an entry that left the layer is forgotten). */
export function commitRemovals(memory: LayerMemory, removals: LayerOp[]): void {
  for (const r of removals) {
    if (r.vanished) memory.seen.delete(r.rel);
    else if (r.entry) memory.seen.set(r.rel, _sig(r.entry));
  }
}

/**
 * Every operation of one layer since `memory`, at once (small layers and
 * tests; the settlement goes a batch at a time). `memory` is not changed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { diffLayer, layerMemory } from "./layer_diff.ts";
 * const root = await Deno.makeTempDir(), dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/u`);
 * await Deno.writeTextFile(`${dir}/u/a.txt`, "hi");
 * const d = await diffLayer({ root, dir }, layerMemory(), new Set());
 * assert.deepEqual(d.ops.map((o) => `${o.kind}:${o.rel}`), ["write:a.txt"]);
 * ```
 */
export async function diffLayer(
  layer: LayerRoot,
  memory: LayerMemory,
  artifacts: ReadonlySet<string>,
): Promise<{ ops: LayerOp[] }> {
  const scan = await scanLayer(layer, memory, artifacts);
  return { ops: [...await opsOf(layer, scan.changed, memory), ...scan.removals] };
}

function _op(layer: LayerRoot, e: UpperEntry, kind: LayerOp["kind"]): LayerOp {
  // `rel` is `/`-separated already: joined without normalizing (a path per entry).
  const root = layer.root === "/" ? "" : layer.root;
  return { rel: e.rel, abs: `${root}/${e.rel}`, upper: `${layer.dir}/u/${e.rel}`, kind, entry: e };
}

/** The changed folders that are opaque, asked of tar once per folder inode. */
async function _opaque(
  upper: string,
  root: string,
  changed: UpperEntry[],
  memory: LayerMemory,
): Promise<Set<string>> {
  const ask: UpperEntry[] = [];
  const found = new Set<string>();
  const dirs = changed.filter((e) => e.kind === "dir");
  // Only a folder the tree has too can hide anything.
  const inTree = await Promise.all(
    dirs.map(async (e) => (await lowerSig(join(root, e.rel)))?.kind === "dir"),
  );
  dirs.forEach((e, i) => {
    const known = memory.opaque.get(e.rel);
    if (known?.ino === e.ino) {
      if (known.opaque) found.add(e.rel);
    } else if (inTree[i]) ask.push(e);
    else memory.opaque.set(e.rel, { ino: e.ino, opaque: false });
  });
  const opaque = await opaqueFolders(upper, ask.map((e) => e.rel));
  for (const e of ask) {
    memory.opaque.set(e.rel, { ino: e.ino, opaque: opaque.has(e.rel) });
    if (opaque.has(e.rel)) found.add(e.rel);
  }
  return found;
}

function _sig(e: UpperEntry): string {
  return `${e.kind}:${e.ino}:${e.size}:${e.mtimeMs}:${e.mode}`;
}
