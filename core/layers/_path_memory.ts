/**
 * What a sandbox's settlements remember per path of one write root, kept
 * small, since a layer may hold a hundred thousand paths: one map from the
 * path (relative to the root) to a slot, and per slot, in typed arrays,
 * the hash of the layer entry last settled (./_layer_diff.ts) and the
 * tree's signature the sandbox's view rests on (./settle_layers.ts). About
 * a hundred bytes a path, where a map of strings and objects took five
 * hundred.
 *
 * @module
 */
import type { Sig } from "./_tree_sig.ts";

const _KINDS: Array<Sig["kind"]> = ["file", "dir", "symlink", "other"];
/** The view's column: 0 nothing known, 1 absent, 2… the kind (index in _KINDS + 2). */
const _NONE = 0, _ABSENT = 1;

/** The paths of one write root: the layer's hashes seen, the tree's signatures viewed. */
export class PathMemory {
  readonly #slot = new Map<string, number>();
  #seen = new Float64Array(0);
  #view = new Uint8Array(0);
  #ino = new Float64Array(0);
  #size = new Float64Array(0);
  #mtime = new Float64Array(0);
  #seenCount = 0;

  #at(rel: string, make: boolean, copy = false): number {
    let i = this.#slot.get(rel);
    if (i !== undefined || !make) return i ?? -1;
    // A key cut from a longer string would keep that string alive: copied.
    if (copy) rel = JSON.parse(JSON.stringify(rel));
    i = this.#slot.size;
    if (i >= this.#seen.length) this.#grow(Math.max(1024, i * 2));
    this.#slot.set(rel, i);
    this.#seen[i] = NaN;
    this.#view[i] = _NONE;
    return i;
  }

  #grow(n: number): void {
    const f = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.#seen = f(this.#seen);
    this.#ino = f(this.#ino);
    this.#size = f(this.#size);
    this.#mtime = f(this.#mtime);
    const v = new Uint8Array(n);
    v.set(this.#view);
    this.#view = v;
  }

  /**
   * The hash seen for `rel`, if any.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { PathMemory } from "./_path_memory.ts";
   * const m = new PathMemory();
   * m.set("a/b", 42);
   * assert.equal(m.get("a/b"), 42);
   * assert.equal(m.size, 1);
   * m.delete("a/b");
   * assert.equal(m.get("a/b"), undefined);
   * assert.deepEqual([...m.keys()], []);
   * ```
   */
  get(rel: string): number | undefined {
    const i = this.#at(rel, false);
    return i < 0 || Number.isNaN(this.#seen[i]) ? undefined : this.#seen[i];
  }

  /** Remember the hash seen for `rel`. */
  set(rel: string, hash: number): this {
    const i = this.#at(rel, true);
    if (Number.isNaN(this.#seen[i])) this.#seenCount++;
    this.#seen[i] = hash;
    return this;
  }

  /** Forget what was seen for `rel` (its view stays). */
  delete(rel: string): boolean {
    const i = this.#at(rel, false);
    if (i < 0 || Number.isNaN(this.#seen[i])) return false;
    this.#seen[i] = NaN;
    this.#seenCount--;
    return true;
  }

  /** How many paths have a hash seen. */
  get size(): number {
    return this.#seenCount;
  }

  /** The paths with a hash seen. */
  *keys(): Generator<string> {
    for (const [rel, i] of this.#slot) if (!Number.isNaN(this.#seen[i])) yield rel;
  }

  /**
   * The tree's signature the view of `rel` rests on: null (absent),
   * undefined (nothing known).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { PathMemory } from "./_path_memory.ts";
   * const m = new PathMemory();
   * assert.equal(m.view("x"), undefined);
   * m.setView("x", { kind: "file", ino: 7, size: 3, mtimeMs: 1_796_000_000_123 });
   * assert.deepEqual(m.view("x"), { kind: "file", ino: 7, size: 3, mtimeMs: 1_796_000_000_123 });
   * m.setView("x", null);
   * assert.equal(m.view("x"), null);
   * ```
   */
  view(rel: string): Sig | null | undefined {
    const i = this.#at(rel, false);
    if (i < 0 || this.#view[i] === _NONE) return undefined;
    if (this.#view[i] === _ABSENT) return null;
    return {
      kind: _KINDS[this.#view[i] - 2],
      ino: this.#ino[i],
      size: this.#size[i],
      mtimeMs: this.#mtime[i],
    };
  }

  /**
   * Remember the tree's signature the view of `rel` rests on (`copy`:
   * `rel` was cut from a longer string, which it must not keep alive).
   */
  setView(rel: string, sig: Sig | null, copy = false): void {
    const i = this.#at(rel, true, copy);
    if (sig === null) {
      this.#view[i] = _ABSENT;
      return;
    }
    this.#view[i] = _KINDS.indexOf(sig.kind) + 2;
    this.#ino[i] = sig.ino;
    this.#size[i] = sig.size;
    this.#mtime[i] = sig.mtimeMs;
  }
}

/**
 * A sandbox's view over all its write roots, read and written by absolute
 * path (as a `Map` of paths to signatures): each path in its root's
 * {@link PathMemory}; a path under no root in a map of its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PathMemory, ViewMap } from "./_path_memory.ts";
 * const v = new ViewMap(new Map([["/ws", new PathMemory()]]));
 * v.set("/ws/a.txt", null);
 * v.set("/elsewhere", null);
 * assert.equal(v.get("/ws/a.txt"), null);
 * assert.equal(v.get("/ws/b.txt"), undefined);
 * assert.equal(v.get("/elsewhere"), null);
 * ```
 */
export class ViewMap {
  readonly #roots: Array<[string, PathMemory]>;
  readonly #other = new Map<string, Sig | null>();

  constructor(roots: Map<string, PathMemory>) {
    this.#roots = [...roots].map(([root, m]) => [root === "/" ? "" : root, m]);
  }

  #find(abs: string): [PathMemory, string] | undefined {
    for (const [root, m] of this.#roots) {
      if (abs.length > root.length + 1 && abs[root.length] === "/" && abs.startsWith(root)) {
        return [m, abs.slice(root.length + 1)];
      }
    }
    return undefined;
  }

  /** The signature the view of `abs` rests on (null: absent; undefined: nothing known). */
  get(abs: string): Sig | null | undefined {
    const f = this.#find(abs);
    return f ? f[0].view(f[1]) : this.#other.get(abs);
  }

  /** Remember it. */
  set(abs: string, sig: Sig | null): this {
    const f = this.#find(abs);
    if (f) f[0].setView(f[1], sig, true);
    else this.#other.set(abs, sig);
    return this;
  }
}
