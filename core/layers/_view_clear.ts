/**
 * What of a sandbox's upper layer no longer belongs in its view of the
 * tree, and taking it out (./view_refresh.ts). An entry of the upper layer
 * hides the tree's version of its path: after corral applied it, that is
 * the same version, until someone else changes the path. Then the entry,
 * its own old copy, must leave the layer for the view to show the tree's.
 *
 * - A file or link whose path the tree now holds otherwise than the view
 *   rests on (the signature corral applied or saw), or never applied.
 * - A whiteout (a removal) whose path the tree holds again.
 * - A folder the tree no longer holds as a folder, or an opaque folder (made
 *   again in the layer) that hides names the tree holds in it: with
 *   everything inside it.
 * - With `all` (a change of the sandbox's was refused or conflicted): every
 *   entry, so that the view is the tree's again, as a fresh layer's is.
 *
 * Never the mount points made in the layer (artifacts), nor what a process
 * of the sandbox holds (an open or mapped file, a working folder, or a
 * folder holding one): taking it out would lose what it writes next.
 * Clearing runs while the sandbox is paused, so no process of it swaps a
 * folder for a link meanwhile; each parent is still checked to be a folder.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { isWithin } from "../base/mod.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import { lowerSig, sameSig, type Sig } from "./_tree_sig.ts";
import { opaqueFolders, type UpperEntry, walkUpper } from "./_upper_walk.ts";

/** What {@link staleEntries} needs to know. */
export interface ClearRules {
  /** The tree's signature the view of `abs` rests on (undefined: none recorded). */
  expected(abs: string): Sig | null | undefined;
  /** Paths never cleared (mount points made in the layer), absolute. */
  artifacts: ReadonlySet<string>;
  /** Clear everything (the view must be the tree's again). */
  all: boolean;
}

/**
 * The entries of `layer`'s upper layer that no longer belong in the view
 * (relative paths).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { staleEntries } from "./_view_clear.ts";
 * import { lowerSig } from "./_tree_sig.ts";
 * const root = await Deno.makeTempDir(), dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/u`);
 * for (const f of ["same.txt", "moved.txt"]) {
 *   await Deno.writeTextFile(`${root}/${f}`, "v1");
 *   await Deno.writeTextFile(`${dir}/u/${f}`, "v1");
 * }
 * const seen = new Map([
 *   [`${root}/same.txt`, await lowerSig(`${root}/same.txt`)],
 *   [`${root}/moved.txt`, await lowerSig(`${root}/moved.txt`)],
 * ]);
 * await Deno.writeTextFile(`${root}/moved.txt`, "v2, by another session");
 * const rules = { expected: (a: string) => seen.get(a), artifacts: new Set<string>(), all: false };
 * assert.deepEqual(await staleEntries({ root, dir }, rules), ["moved.txt"]);
 * assert.deepEqual(await staleEntries({ root, dir }, { ...rules, all: true }), ["moved.txt", "same.txt"]);
 * ```
 */
export async function staleEntries(layer: LayerRoot, rules: ClearRules): Promise<string[]> {
  const upper = join(layer.dir, "u");
  const entries = await walkUpper(upper);
  const at = (rel: string) => join(layer.root, rel);
  // An artifact, or a folder holding one, stays.
  const kept = (abs: string) => [...rules.artifacts].some((a) => isWithin(a, abs));
  const out = new Set<string>();
  const whole = (rel: string) => {
    out.add(rel);
    for (const e of entries) if (e.rel.startsWith(rel + "/")) out.add(e.rel);
  };
  const hiding: UpperEntry[] = [];
  for (const e of entries) {
    const abs = at(e.rel);
    if (out.has(e.rel) || kept(abs)) continue;
    if (rules.all) {
      out.add(e.rel);
      continue;
    }
    const tree = await lowerSig(abs);
    if (e.kind === "whiteout") {
      if (tree !== null) out.add(e.rel);
    } else if (e.kind !== "dir") {
      const base = rules.expected(abs);
      if (base === undefined || !sameSig(tree, base)) out.add(e.rel);
    } else if (tree?.kind !== "dir") {
      if (tree !== null || rules.expected(abs) !== undefined) whole(e.rel);
    } else if (await _hides(join(upper, e.rel), abs)) hiding.push(e);
  }
  const opaque = await opaqueFolders(upper, hiding.map((e) => e.rel)).catch(() => new Set());
  for (const e of hiding) if (opaque.has(e.rel)) whole(e.rel);
  return [...out].filter((rel) => !kept(at(rel)));
}

/**
 * What a sandbox's processes hold: inodes, and paths (absolute, in the
 * tree's names: open files, working folders, mount points) that pin every
 * folder above them.
 */
export interface Holds {
  inos: ReadonlySet<number>;
  paths: readonly string[];
}

/**
 * Take `rels` out of `layer`'s upper layer (deepest first), except what
 * `holds` names (by inode, or a path at or under the entry) and a folder
 * that is not empty by then. Returns what was cleared and what was kept.
 */
export async function clearEntries(
  layer: LayerRoot,
  rels: string[],
  holds: Holds,
): Promise<{ cleared: string[]; kept: string[] }> {
  const upper = join(layer.dir, "u");
  const cleared: string[] = [];
  const kept: string[] = [];
  const deepest = [...rels].sort((a, b) => b.split("/").length - a.split("/").length);
  for (const rel of deepest) {
    const abs = join(layer.root, rel);
    const path = join(upper, rel);
    let st: Deno.FileInfo;
    try {
      if (!(await _foldersUpTo(upper, rel))) throw new Error("not under folders");
      st = await Deno.lstat(path);
    } catch {
      kept.push(rel);
      continue;
    }
    const held = holds.inos.has(st.ino ?? -1) ||
      holds.paths.some((p) => p === abs || (st.isDirectory && isWithin(p, abs)));
    try {
      if (held) throw new Error("held");
      // A folder goes only once empty: what it still holds is held, or kept.
      await Deno.remove(path);
      cleared.push(rel);
    } catch {
      kept.push(rel);
    }
  }
  return { cleared, kept };
}

/** Whether every parent of `rel` inside `upper` is a folder, not a link. */
async function _foldersUpTo(upper: string, rel: string): Promise<boolean> {
  const parts = dirname(rel) === "." ? [] : dirname(rel).split("/");
  let at = upper;
  for (const p of parts) {
    at = join(at, p);
    const st = await Deno.lstat(at);
    if (!st.isDirectory) return false;
  }
  return true;
}

/** Whether the tree's folder `abs` holds a name that the layer's folder `upper` does not. */
async function _hides(upper: string, abs: string): Promise<boolean> {
  const mine = new Set<string>();
  try {
    for await (const e of Deno.readDir(upper)) mine.add(e.name);
    for await (const e of Deno.readDir(abs)) if (!mine.has(e.name)) return true;
  } catch { /* gone meanwhile: nothing to show */ }
  return false;
}
