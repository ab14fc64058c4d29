/**
 * The last phase of a settlement: a repository's refs, `HEAD` and index,
 * judged after everything else is applied (so that the objects they name
 * are in the tree) and applied when ./_git_rules.ts finds that they would not make the user's own
 * git write out a protected path. A repository's ref files are applied or
 * refused together; its index on its own.
 *
 * @module
 */
import { join, relative } from "node:path";
import type { RuleContext } from "./change_rules.ts";
import { indexRefusal, looseRefs, refsRefusal, refView } from "./_git_rules.ts";
import type { LayerOp } from "./_layer_diff.ts";

/** The verdicts on ref operations: those to apply, and those refused with why. */
export interface RefVerdicts {
  apply: LayerOp[];
  refuse: Array<[LayerOp, string]>;
}

/**
 * Judge the ref operations `ops` (ref-like files of git folders), once
 * everything else of the settlement is in the tree.
 */
export async function judgeGitRefs(ops: LayerOp[], ctx: RuleContext): Promise<RefVerdicts> {
  const out: RefVerdicts = { apply: [], refuse: [] };
  const byRepo = new Map<string, LayerOp[]>();
  for (const op of ops) {
    const gitDir = op.gitDir || _gitDir(op.abs);
    byRepo.set(gitDir, [...(byRepo.get(gitDir) ?? []), op]);
  }
  for (const [gitDir, list] of byRepo) {
    const entries = _treeEntries(ctx, gitDir);
    const index = list.filter((op) => relative(gitDir, op.abs) === "index");
    const refs = list.filter((op) => !index.includes(op));
    for (const op of index) {
      const why = op.kind === "remove"
        ? undefined
        : await indexRefusal(gitDir, _file(op.abs), op.upper, entries);
      if (why) out.refuse.push([op, why]);
      else out.apply.push(op);
    }
    if (refs.length === 0) continue;
    const why = await refsRefusal(gitDir, _view(gitDir), _view(gitDir, refs), entries);
    for (const op of refs) {
      if (why) out.refuse.push([op, why]);
      else out.apply.push(op);
    }
  }
  return out;
}

/** The git folder holding `abs` (the path up to its first `.git` component). */
function _gitDir(abs: string): string {
  const parts = abs.split("/");
  const i = parts.map((p) => p.toLowerCase()).indexOf(".git");
  return parts.slice(0, i + 1).join("/");
}

/**
 * The protected entries as paths of the repository's tree: the entries,
 * and the folders its `core.hooksPath` names inside the worktree.
 */
function _treeEntries(ctx: RuleContext, gitDir: string): string[] {
  const worktree = gitDir.slice(0, gitDir.lastIndexOf("/")) || "/";
  const hooks = ctx.hooksFolders
    .filter((h) => h.startsWith(worktree + "/"))
    .map((h) => relative(worktree, h) + "/");
  return [...ctx.entries.filter((e) => !e.toLowerCase().startsWith(".git/")), ...hooks];
}

/** The refs of `gitDir` as the tree holds them, with `ops` (from the layer) applied. */
function _view(gitDir: string, ops: LayerOp[] = []) {
  const byRel = new Map(ops.map((op) => [relative(gitDir, op.abs), op]));
  const read = (rel: string) => {
    const op = byRel.get(rel);
    if (op) return op.kind === "remove" ? undefined : _text(op.upper);
    return _text(join(gitDir, rel));
  };
  const loose = new Set(looseRefs(gitDir));
  for (const [rel, op] of byRel) {
    if (!rel.startsWith("refs/")) continue;
    if (op.kind === "remove") loose.delete(rel);
    else if (op.kind === "write") loose.add(rel);
  }
  return refView(read, [...loose]);
}

function _text(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

function _file(path: string): string | undefined {
  try {
    return Deno.statSync(path).isFile ? path : undefined;
  } catch {
    return undefined;
  }
}
