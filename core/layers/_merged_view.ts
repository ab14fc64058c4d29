/**
 * The tree as it will be once a layer is applied: the upper layer over the
 * write root (a whiteout hides, a file, link or whiteout in the layer hides
 * what lies below its name in the tree), and the tree alone outside the
 * root. The judge reads it to find what git will take for a repository
 * after the change (./_git_dirs.ts) and where a link will lead
 * ({@link MergedView.resolve}). Lookups are cached for one settlement.
 *
 * An opaque folder of the layer is read as if it were not (what the tree
 * holds below it still counts): the judge then finds more, never less.
 *
 * @module
 */
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { isWithin } from "../base/mod.ts";

/** What a path is. */
export type Kind = "file" | "dir" | "symlink" | "other";

type _Upper = Kind | "absent" | "whiteout" | "blocked";

/** Links followed at most while resolving one path (as the kernel's 40). */
const _HOPS = 40;

/** The tree under a layer, as it will be after the layer is applied. */
export class MergedView {
  readonly root: string;
  readonly upper: string;
  readonly #upper = new Map<string, Promise<_Upper>>();
  readonly #tree = new Map<string, Promise<Kind | null>>();

  /** `root`: the write root; `upper`: its upper layer folder. */
  constructor(root: string, upper: string) {
    this.root = root;
    this.upper = upper;
  }

  /**
   * What is at `abs` after the settlement, or null.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { MergedView } from "./_merged_view.ts";
   * const root = await Deno.makeTempDir(), upper = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${root}/a`, "tree");
   * await Deno.mkdir(`${upper}/d`);
   * const v = new MergedView(root, upper);
   * assert.equal(await v.after(`${root}/a`), "file");
   * assert.equal(await v.after(`${root}/d`), "dir");
   * assert.equal(await v.before(`${root}/d`), null);
   * ```
   */
  async after(abs: string): Promise<Kind | null> {
    if (!isWithin(abs, this.root)) return await this.before(abs);
    const u = await this.#inUpper(relative(this.root, abs));
    if (u === "absent") return await this.before(abs);
    return u === "whiteout" || u === "blocked" ? null : u;
  }

  /** What is at `abs` in the tree now, or null. */
  before(abs: string): Promise<Kind | null> {
    let p = this.#tree.get(abs);
    if (!p) this.#tree.set(abs, p = _kind(abs));
    return p;
  }

  /** Whether the layer itself holds `abs` (a file, folder, link or whiteout). */
  async inLayer(abs: string): Promise<boolean> {
    if (!isWithin(abs, this.root)) return false;
    const u = await this.#inUpper(relative(this.root, abs));
    return u !== "absent" && u !== "blocked";
  }

  /** The names in the folder `abs` after the settlement (the layer's and the tree's). */
  async names(abs: string): Promise<string[]> {
    const out = new Set<string>();
    if ((await this.before(abs)) === "dir") {
      for await (const e of _readDir(abs)) out.add(e);
    }
    if (isWithin(abs, this.root) && (await this.#inUpper(relative(this.root, abs))) === "dir") {
      for await (const e of _readDir(join(this.upper, relative(this.root, abs)))) out.add(e);
    }
    const kept: string[] = [];
    for (const n of out) if (await this.after(join(abs, n))) kept.push(n);
    return kept.sort();
  }

  /**
   * Where `abs` leads after the settlement: every link on the way (in the
   * layer or the tree) followed, `..` taken after the link it follows; a
   * missing part ends the walk (the rest is taken as written).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { MergedView } from "./_merged_view.ts";
   * const root = await Deno.realPath(await Deno.makeTempDir());
   * const upper = await Deno.makeTempDir();
   * await Deno.mkdir(`${root}/.git`);
   * await Deno.symlink(".git", `${upper}/g`);
   * await Deno.symlink("g/config", `${upper}/c`);
   * const v = new MergedView(root, upper);
   * assert.equal(await v.resolve(`${root}/c`), `${root}/.git/config`);
   * ```
   */
  async resolve(abs: string): Promise<string> {
    let parts = abs.split("/").filter((p) => p && p !== ".");
    let cur = "/";
    for (let hops = 0; parts.length;) {
      const p = parts.shift()!;
      if (p === "..") {
        cur = dirname(cur);
        continue;
      }
      const next = join(cur, p);
      const kind = await this.after(next);
      if (kind === null) return resolve(next, ...parts);
      if (kind !== "symlink") {
        cur = next;
        continue;
      }
      if (++hops > _HOPS) return resolve(next, ...parts);
      const target = await this.#readLink(next);
      if (target === undefined) return resolve(next, ...parts);
      parts = [...target.split("/").filter((x) => x && x !== "."), ...parts];
      if (isAbsolute(target)) cur = "/";
    }
    return cur;
  }

  async #readLink(abs: string): Promise<string | undefined> {
    const inLayer = await this.inLayer(abs);
    const at = inLayer ? join(this.upper, relative(this.root, abs)) : abs;
    try {
      return await Deno.readLink(at);
    } catch {
      return undefined;
    }
  }

  /** What the layer says of `rel` (relative to the root, `""` for the root). */
  #inUpper(rel: string): Promise<_Upper> {
    let p = this.#upper.get(rel);
    if (!p) this.#upper.set(rel, p = this.#lookUpper(rel));
    return p;
  }

  async #lookUpper(rel: string): Promise<_Upper> {
    if (rel === "") return "dir";
    const parent = await this.#inUpper(rel.includes("/") ? dirname(rel) : "");
    // Below a file, link or whiteout of the layer, the tree's path is hidden (or led elsewhere).
    if (parent !== "dir") return parent === "absent" ? "absent" : "blocked";
    try {
      const st = await Deno.lstat(join(this.upper, rel));
      if (st.isCharDevice && (st.rdev ?? -1) === 0) return "whiteout";
      return st.isSymlink ? "symlink" : st.isFile ? "file" : st.isDirectory ? "dir" : "other";
    } catch {
      return "absent";
    }
  }
}

async function _kind(abs: string): Promise<Kind | null> {
  try {
    const st = await Deno.lstat(abs);
    return st.isSymlink ? "symlink" : st.isFile ? "file" : st.isDirectory ? "dir" : "other";
  } catch {
    return null;
  }
}

async function* _readDir(dir: string): AsyncGenerator<string> {
  try {
    for await (const e of Deno.readDir(dir)) yield e.name;
  } catch { /* gone */ }
}
