/**
 * What changed in one upper layer since it was last settled: each entry
 * whose signature differs from the last walk's becomes an operation on the
 * tree (write a file, make a folder or a link, remove a path, prune what an
 * opaque folder hides), and an entry that vanished (the tool removed a path
 * that existed only in its layer, after corral had applied it) becomes a
 * removal.
 *
 * The layer is read as a stream (./_upper_stream.ts) and counted against
 * its quota (./layer_quota.ts) as it is read; only the changed entries are
 * kept, and they become operations a batch at a time ({@link opsOf}), so
 * the host's memory follows the changes, not the layer.
 *
 * @module
 */
import { join } from "node:path";
import { lowerSig, type Sig } from "./_tree_sig.ts";
import { PathMemory } from "./_path_memory.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import { type LayerQuota, layerQuota, QuotaCount } from "./layer_quota.ts";
import { REPORT_PATHS } from "./change_report.ts";
import { streamUpper } from "./_upper_stream.ts";
import { opaqueFolders, type UpperEntry } from "./_upper_walk.ts";

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
  /** What the tree held at `abs` when its batch was read (./_apply_batch.ts), when known. */
  now?: Sig | null;
  /** What `lstat` read there then, when read with it (the judge reads the mode from it). */
  nowInfo?: Deno.FileInfo | null;
  /**
   * Set by the judge (./_layer_judge.ts): the mode to apply, masked
   * (./_mode_rules.ts); the applier applies exactly `mode & 0o7777`.
   */
  mode?: number;
  /** Set by the judge: the mode the tree's file or folder has now (a folder's change of mode). */
  treeMode?: number;
  /** Set by the judge: the git directory of a ref, `HEAD` or index (./_git_settle.ts). */
  gitDir?: string;
  /** Set by the judge: a removal whose conflicts were checked path by path (./_removal_rules.ts). */
  judged?: boolean;
}

/**
 * The state a layer's walks keep: per path, the hash of the entry last
 * settled (and the view's signature: ./_path_memory.ts); folders found
 * opaque (by inode).
 */
export interface LayerMemory {
  seen: PathMemory;
  opaque: Map<string, { ino: number; opaque: boolean }>;
}

/** A new, empty memory. */
export function layerMemory(): LayerMemory {
  return { seen: new PathMemory(), opaque: new Map() };
}

/** What the first read of a layer found: its count, and whether anything changed. */
export interface LayerCount {
  /** The layer's entries and bytes against its quota (`over` set when passed). */
  count: QuotaCount;
  /** Entries changed since `memory` (removals included). */
  changed: number;
  /** Some entry the last walk saw left the layer. */
  vanished: boolean;
}

/**
 * The first read of a layer: count it against `quota` and tell whether
 * anything changed since `memory`, keeping nothing of it.
 */
export async function countLayer(
  layer: LayerRoot,
  memory: LayerMemory,
  artifacts: ReadonlySet<string>,
  quota: LayerQuota = layerQuota(),
): Promise<LayerCount> {
  const out: LayerCount = {
    count: new QuotaCount(quota),
    changed: 0,
    vanished: false,
  };
  let held = 0;
  const hidden = (size: number) => void out.count.add(size);
  for await (const chunk of streamUpper(join(layer.dir, "u"), { hidden })) {
    for (const e of chunk) {
      out.count.add(e.kind === "file" ? e.size : 0);
      const was = memory.seen.get(e.rel);
      if (was !== undefined) held++;
      if (was !== _sig(e) && !_artifact(layer, e, artifacts)) out.changed++;
    }
  }
  out.vanished = held < memory.seen.size;
  return out;
}

/** What the second read leaves for the end: the whiteouts, and what lay past the quota. */
export interface LayerRest {
  whiteouts: UpperEntry[];
  /** The first changed paths past the quota (relative). */
  past: string[];
  /** How many changed entries lay past the quota. */
  pastCount: number;
  /** The count of the second read (the layer may have grown since the first). */
  count?: QuotaCount;
}

/** An empty {@link LayerRest}. */
export function layerRest(): LayerRest {
  return { whiteouts: [], past: [], pastCount: 0 };
}

/**
 * The second read: the changed entries within the quota, in batches of
 * `size` (parents before children), as the layer is read; whiteouts and
 * what lies past the quota go to `rest`.
 */
export async function* changedBatches(
  layer: LayerRoot,
  memory: LayerMemory,
  artifacts: ReadonlySet<string>,
  quota: LayerQuota,
  rest: LayerRest,
  size: number,
): AsyncGenerator<UpperEntry[]> {
  const count = rest.count = new QuotaCount(quota);
  let batch: UpperEntry[] = [];
  const hidden = (bytes: number) => void count.add(bytes);
  for await (const chunk of streamUpper(join(layer.dir, "u"), { chunk: size, hidden })) {
    for (const e of chunk) {
      const over = count.add(e.kind === "file" ? e.size : 0);
      if (memory.seen.get(e.rel) === _sig(e) || _artifact(layer, e, artifacts)) continue;
      if (over) {
        if (rest.past.length < REPORT_PATHS) rest.past.push(e.rel);
        rest.pastCount++;
      } else if (e.kind === "whiteout") rest.whiteouts.push(e);
      else batch.push(e);
    }
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/**
 * The removals of a settlement, deepest first (a folder's after its
 * contents'): the whiteouts read, and, when the first read saw entries
 * leave the layer (`vanished`), those (a third read finds them).
 */
export async function removalsOf(
  layer: LayerRoot,
  memory: LayerMemory,
  rest: LayerRest,
  vanished: boolean,
): Promise<LayerOp[]> {
  const removals = rest.whiteouts.map((e) => _op(layer, e, "remove"));
  if (vanished) {
    const now = new Set<string>();
    for await (const chunk of streamUpper(join(layer.dir, "u"))) {
      for (const e of chunk) now.add(e.rel);
    }
    for (const rel of memory.seen.keys()) {
      if (now.has(rel)) continue;
      const e = { rel, kind: "other", ino: 0, size: 0, mtimeMs: 0, birthMs: 0, mode: 0 } as const;
      removals.push({ ..._op(layer, e, "remove"), entry: undefined, vanished: true });
    }
  }
  const depth = (o: LayerOp) => o.rel.split("/").length;
  return removals.sort((a, b) => depth(b) - depth(a));
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
 * tests; a settlement goes a batch at a time). `memory` is not changed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { diffLayer, layerMemory } from "./_layer_diff.ts";
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
  const quota = layerQuota({ layer_max_entries: 1e8 });
  const first = await countLayer(layer, memory, artifacts, quota);
  const rest = layerRest();
  const ops: LayerOp[] = [];
  for await (const b of changedBatches(layer, memory, artifacts, quota, rest, 1e6)) {
    ops.push(...await opsOf(layer, b, memory));
  }
  return { ops: [...ops, ...await removalsOf(layer, memory, rest, first.vanished)] };
}

function _artifact(layer: LayerRoot, e: UpperEntry, artifacts: ReadonlySet<string>): boolean {
  return artifacts.size > 0 && artifacts.has(join(layer.root, e.rel));
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

/**
 * An entry's signature (kind, inode, size, modification time, mode) as a
 * 53-bit hash: one number per entry in the memory, not a string; a change
 * that hashes the same is one in 2^53.
 */
function _sig(e: UpperEntry): number {
  _h.a = 0x811c9dc5;
  _h.b = 0x9747b28c;
  _mix(_KINDS.indexOf(e.kind));
  _mix(e.mode);
  _mix2(e.ino);
  _mix2(e.size);
  _mix2(e.mtimeMs);
  return (_h.a >>> 0) * 2 ** 21 + (_h.b >>> 11);
}

const _h = { a: 0, b: 0 };

function _mix(w: number): void {
  _h.a = Math.imul(_h.a ^ w, 0x01000193);
  _h.b = Math.imul(_h.b ^ w, 0x5bd1e995);
  _h.b ^= _h.b >>> 15;
}

/** A number of up to 53 bits, as two words. */
function _mix2(x: number): void {
  _mix(x >>> 0);
  _mix(Math.floor(x / 2 ** 32));
}

const _KINDS = ["file", "dir", "symlink", "whiteout", "other"];
