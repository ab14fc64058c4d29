/**
 * What changed in one upper layer since it was last settled: each entry
 * whose signature differs from the last walk's becomes an operation on the
 * tree (write a file, make a folder or a link, remove a path, prune what an
 * opaque folder hides), and an entry that vanished (the tool removed a path
 * that existed only in its layer, after corral had applied it) becomes a
 * removal.
 *
 * @module
 */
import { join } from "node:path";
import { lowerSig } from "./tree_sig.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import { opaqueFolders, type UpperEntry, walkUpper } from "./upper_walk.ts";

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
  /** Set by the judge (./layer_judge.ts): the mode to apply, masked (./mode_rules.ts). */
  mode?: number;
  /** Set by the judge: the mode the tree's file or folder has now (a folder's change of mode). */
  treeMode?: number;
  /** Set by the judge: the git directory of a ref, `HEAD` or index (./git_settle.ts). */
  gitDir?: string;
  /** Set by the judge: a removal whose conflicts were checked path by path (./removal_rules.ts). */
  judged?: boolean;
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

/**
 * The operations of one layer since `memory` (which is not changed: the
 * caller commits the returned `seen` once they are settled).
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
): Promise<{ ops: LayerOp[]; seen: Map<string, string> }> {
  const upper = join(layer.dir, "u");
  const entries = await walkUpper(upper);
  const seen = new Map(entries.map((e) => [e.rel, _sig(e)]));
  const changed = entries.filter((e) => memory.seen.get(e.rel) !== seen.get(e.rel));
  const at = (rel: string) => join(layer.root, rel);
  const ops: LayerOp[] = [];
  const removals: LayerOp[] = [];
  const opaque = await _opaque(upper, layer.root, changed, memory);
  for (const e of changed) {
    const op: LayerOp = {
      rel: e.rel,
      abs: at(e.rel),
      upper: join(upper, e.rel),
      kind: "other",
      entry: e,
    };
    if (artifacts.has(op.abs)) continue;
    if (e.kind === "whiteout") removals.push({ ...op, kind: "remove" });
    else if (e.kind === "file") ops.push({ ...op, kind: "write" });
    else if (e.kind === "symlink") ops.push({ ...op, kind: "symlink" });
    else if (e.kind === "dir") {
      ops.push({ ...op, kind: "dir" });
      if (opaque.has(e.rel)) ops.push({ ...op, kind: "prune" });
    } else ops.push(op);
  }
  for (const rel of memory.seen.keys()) {
    if (!seen.has(rel)) {
      removals.push({ rel, abs: at(rel), upper: join(upper, rel), kind: "remove", vanished: true });
    }
  }
  // Deepest first, so a folder's removal comes after its contents'.
  removals.sort((a, b) => b.rel.split("/").length - a.rel.split("/").length);
  return { ops: [...ops, ...removals], seen };
}

/** The changed folders that are opaque, asked of tar once per folder inode. */
async function _opaque(
  upper: string,
  root: string,
  changed: UpperEntry[],
  memory: LayerMemory,
): Promise<Set<string>> {
  const ask: string[] = [];
  const found = new Set<string>();
  for (const e of changed) {
    if (e.kind !== "dir") continue;
    const known = memory.opaque.get(e.rel);
    if (known?.ino === e.ino) {
      if (known.opaque) found.add(e.rel);
      continue;
    }
    // Only a folder the tree has too can hide anything.
    if ((await lowerSig(join(root, e.rel)))?.kind === "dir") ask.push(e.rel);
    else memory.opaque.set(e.rel, { ino: e.ino, opaque: false });
  }
  const opaque = await opaqueFolders(upper, ask);
  for (const rel of ask) {
    const ino = changed.find((e) => e.rel === rel)!.ino;
    memory.opaque.set(rel, { ino, opaque: opaque.has(rel) });
    if (opaque.has(rel)) found.add(rel);
  }
  return found;
}

function _sig(e: UpperEntry): string {
  return `${e.kind}:${e.ino}:${e.size}:${e.mtimeMs}:${e.mode}`;
}
