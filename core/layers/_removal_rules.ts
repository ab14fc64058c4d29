/**
 * Removals judged over what they take. A folder the layer removed (a
 * whiteout: `rm -rf libs`), replaced by a file or link, or made again
 * empty (an opaque folder: `rm -rf deep; mkdir deep`) takes everything the
 * tree holds below it. Each of those paths is judged as removing it alone
 * would be:
 *
 * - a protected entry, a hooks folder, a `.git`, or a folder that is a git
 *   directory under any name (a nested repository's history) stays, and
 *   the change list says why (refused);
 * - a file changed in the tree since the sandbox's view of it, or made
 *   there since, stays and is reported as a conflict (no lost update);
 * - a name that is not UTF-8, where it would have to be removed alone,
 *   stays (nothing can name it to the file system), said so.
 *
 * What may go goes as the largest subtrees that hold nothing kept; the
 * folders on the way to what stays stay. The tree is listed by GNU find,
 * names as bytes (./_raw_list.ts).
 *
 * @module
 */
import { join } from "node:path";
import { listRaw, type RawEntry } from "./_raw_list.ts";

/** What the removal needs to know of each path it would take. */
export interface RemovalRules {
  /** Why removing the tree path `abs` is refused, or undefined. */
  refusal(abs: string): string | undefined;
  /** Whether the tree's file at `abs` changed since the sandbox's view of it. */
  changed(abs: string, e: RawEntry): boolean;
  /**
   * For a folder made again empty: what the layer holds at `abs` (a path
   * below it), or null when the layer hides the tree's path.
   */
  layer?(abs: string): Promise<"dir" | "other" | null>;
}

/** What removing a folder takes, and what stays. */
export interface RemovalPlan {
  /** The folder goes as a whole (nothing below it stays). */
  whole: boolean;
  /** Otherwise, the subtrees that go (absolute paths). */
  remove: string[];
  /** Paths that stay because removing them is refused, with why. */
  kept: Array<{ abs: string; why: string }>;
  /** Paths that stay because they changed outside the sandbox. */
  conflicts: string[];
}

interface _Node {
  e: RawEntry;
  abs: string;
  children: _Node[];
  skip?: boolean;
  covered?: boolean;
  keep?: string;
  conflict?: boolean;
  hold?: boolean;
}

/** The reason a name that is not UTF-8 stays. */
export const NOT_UTF8 = "its name is not UTF-8: corral cannot name it to the file system, " +
  "so it was not removed";

/**
 * Plan removing the tree's folder `abs`: `made` when the layer made it
 * again (opaque: what it holds in the layer stays, the rest goes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planRemoval } from "./_removal_rules.ts";
 * const d = await Deno.makeTempDir();
 * await Deno.mkdir(`${d}/libs/nested/.git`, { recursive: true });
 * await Deno.writeTextFile(`${d}/libs/a.ts`, "");
 * const rules = {
 *   refusal: (p: string) => p.endsWith("/.git") ? "a repository" : undefined,
 *   changed: () => false,
 * };
 * const plan = await planRemoval(`${d}/libs`, false, rules);
 * assert.equal(plan.whole, false);
 * assert.deepEqual(plan.remove, [`${d}/libs/a.ts`]);
 * assert.deepEqual(plan.kept.map((k) => k.abs), [`${d}/libs/nested/.git`]);
 * ```
 */
export async function planRemoval(
  abs: string,
  made: boolean,
  rules: RemovalRules,
): Promise<RemovalPlan> {
  const list = await listRaw(abs, { minDepth: 0 });
  const plan: RemovalPlan = { whole: false, remove: [], kept: [], conflicts: [] };
  if (list.length === 0) return { ...plan, whole: !made };
  const nodes = new Map<string, _Node>();
  const order: _Node[] = [];
  for (const e of list) {
    const n: _Node = { e, abs: e.rel ? join(abs, e.rel) : abs, children: [] };
    nodes.set(e.rel, n);
    order.push(n);
    if (e.rel) nodes.get(_parent(e.rel))?.children.push(n);
  }
  const root = nodes.get("")!;
  const parentOf = (n: _Node) => nodes.get(_parent(n.e.rel));
  const hold = (n: _Node | undefined) => {
    for (; n && !n.hold; n = parentOf(n)) n.hold = true;
  };
  for (const n of order) {
    if (n === root) {
      n.covered = made;
      continue;
    }
    const p = parentOf(n);
    if (!p || p.skip || p.keep) {
      n.skip = true;
      continue;
    }
    if (p.covered && rules.layer) {
      const there = await rules.layer(n.abs);
      if (there === "dir" && n.e.type === "d") {
        n.covered = true;
        continue;
      }
      if (there !== null) {
        n.skip = true; // the layer's own change there is judged as such
        continue;
      }
    }
    const why = _isGitDir(n) ? _REPO : rules.refusal(n.abs);
    if (why) {
      n.keep = why;
      hold(n);
    } else if (n.e.type !== "d" && rules.changed(n.abs, n.e)) {
      n.conflict = true;
      hold(n);
    }
  }
  const emit = (n: _Node): void => {
    if (n.skip) return;
    if (n.keep) return void plan.kept.push({ abs: n.abs, why: n.keep });
    if (n.conflict) return void plan.conflicts.push(n.abs);
    if (n.covered || n.hold) return n.children.forEach(emit);
    if (n === root) return void (plan.whole = true);
    if (!n.e.utf8) return void plan.kept.push({ abs: n.abs, why: NOT_UTF8 });
    plan.remove.push(n.abs);
  };
  emit(root);
  return plan;
}

const _REPO = "it is a git repository (HEAD, objects, refs: its history); removing it is " +
  "refused, as removing a .git folder is";

/** Whether the listed folder `n` is a git directory (git's own test, on the listing). */
function _isGitDir(n: _Node): boolean {
  if (n.e.type !== "d") return false;
  const kind = new Map(n.children.map((c) => [c.e.rel.slice(c.e.rel.lastIndexOf("/") + 1), c.e]));
  const head = kind.get("HEAD")?.type;
  if (head !== "f" && head !== "l") return false;
  if (kind.has("commondir")) return true;
  const dirLike = (t?: string) => t === "d" || t === "l";
  return dirLike(kind.get("objects")?.type) && dirLike(kind.get("refs")?.type);
}

function _parent(rel: string): string {
  const i = rel.lastIndexOf("/");
  return i < 0 ? "" : rel.slice(0, i);
}
