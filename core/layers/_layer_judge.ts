/**
 * The judge of one settlement of one write root: what each operation of
 * the layer (./_layer_diff.ts) becomes, read the way git, the shell and
 * the file system's links will read the tree after it:
 *
 * - the rules of ./change_rules.ts, with every repository git's discovery
 *   finds (./_git_dirs.ts: under any name, also one the layer makes) and
 *   every hooks folder and included config file git's config names
 *   (./hooks_folders.ts, read by git);
 * - a folder the layer makes into a git directory is judged with what the
 *   tree already holds in it (its `config` as if new, hooks, `commondir`);
 * - a link is judged where it leads (./_merged_view.ts): one that leads to a
 *   protected place or into a git directory is refused;
 * - a removal, a folder made again, or a file in place of a folder is
 *   judged over everything the tree holds below it (./_removal_rules.ts);
 * - a mode is masked to what the tree had (./_mode_rules.ts).
 *
 * @module
 */
import { basename, dirname, join, relative } from "node:path";
import { HOOKS_PATH_ENTRY, matchPlanted } from "../guard/mod.ts";
import { type ChangeKind, hasEntry, judgeChange, type RuleContext } from "./change_rules.ts";
import { configRefusal } from "./_git_rules.ts";
import { copiedUp } from "./_copy_ups.ts";
import { isGitDir, treeRepos } from "./_git_dirs.ts";
import { type GitEnv, hooksFacts, hooksFoldersOf, type HooksPathValue } from "./hooks_folders.ts";
import type { LayerOp } from "./_layer_diff.ts";
import { type Kind, MergedView } from "./_merged_view.ts";
import { maskedMode, maskedWhy, userUmask } from "./_mode_rules.ts";
import { planRemoval, type RemovalPlan, type RemovalRules } from "./_removal_rules.ts";
import type { RawEntry } from "./_raw_list.ts";
import { sameSig, type Sig } from "./_tree_sig.ts";

/** What the sandbox's view of the tree rests on (./settle_layers.ts keeps it). */
export interface ViewBase {
  /** The tree's signature the view of `abs` rests on; undefined when none is kept. */
  base(abs: string): Sig | null | undefined;
  /** Since when the view of every other path was taken. */
  epoch: number;
}

/** What one operation becomes. */
export interface Judged {
  /** Why it is refused. */
  refuse?: string;
  /** It waits for the refs' phase (./_git_settle.ts), `op.gitDir` set. */
  ref?: boolean;
  /** It is a conflict itself (its version is kept, not applied). */
  conflict?: boolean;
  /** What to apply in its place: itself, or what a removal comes to. */
  apply: LayerOp[];
  /** Paths a removal leaves in the tree because removing them is refused. */
  kept: Array<{ abs: string; why: string }>;
  /** Paths a removal leaves because they changed outside the sandbox. */
  conflicts: string[];
  /** Why its mode was masked. */
  masked?: string;
}

/** What {@link LayerJudge.start} needs beyond the layer. */
export interface JudgeOptions {
  /** The rules without the root and what git says (added per root). */
  rules: Omit<RuleContext, "root" | "hooksFolders" | "gitDirs" | "configFiles">;
  view: ViewBase;
  env: GitEnv;
  /** A path as the change list shows it. */
  shown(abs: string): string;
}

/** The judge of one settlement of the write root `root` (its upper layer `upper`). */
export class LayerJudge {
  readonly ctx: RuleContext & { hooksFolders: string[]; gitDirs: Set<string> };
  readonly #o: JudgeOptions;
  readonly #tree: MergedView;
  readonly #userValues: HooksPathValue[];
  readonly #checked = new Set<string>();
  /** Folders the layer makes into git directories, and why that is refused ("" when not). */
  readonly #making = new Map<string, Promise<string> | undefined>();
  readonly #told = new Set<string>();
  /**
   * The paths of the operations prepared so far inside a folder the layer
   * makes a git directory (only those are asked about: the memory follows
   * them, not the layer).
   */
  readonly #ops = new Map<string, LayerOp["kind"]>();

  private constructor(
    o: JudgeOptions,
    tree: MergedView,
    ctx: LayerJudge["ctx"],
    user: HooksPathValue[],
  ) {
    this.#o = o;
    this.#tree = tree;
    this.ctx = ctx;
    this.#userValues = user;
  }

  /** Start judging `root`: its repositories and what git's config says of them, read now. */
  static async start(root: string, upper: string, o: JudgeOptions): Promise<LayerJudge> {
    const facts = await hooksFacts(await treeRepos(root), o.env);
    const hooksOn = o.rules.entries.includes(HOOKS_PATH_ENTRY);
    const ctx = {
      ...o.rules,
      root,
      hooksFolders: hooksOn ? facts.folders : [],
      gitDirs: new Set<string>(),
      configFiles: new Set(hasEntry(o.rules.entries, ".git/config") ? facts.configFiles : []),
    };
    return new LayerJudge(o, new MergedView(root, upper), ctx, hooksOn ? facts.userValues : []);
  }

  /** Learn the repositories around `ops` (call before judging them; again for each batch). */
  async prepare(ops: readonly LayerOp[]): Promise<void> {
    for (const op of ops) {
      // Every folder above it is known after this: a git directory in the making too.
      await this.#around(op.kind === "dir" ? op.abs : dirname(op.abs));
      for (const d of this.#making.keys()) {
        if (op.abs === d || op.abs.startsWith(d + "/")) this.#ops.set(op.abs, op.kind);
      }
    }
    // What the tree no longer holds though the layer copied it up from there: removed since.
    const kinds = ["write", "symlink", "dir"];
    const absent = await Promise.all(
      ops.map(async (op) =>
        kinds.includes(op.kind) && !op.vanished && this.#o.view.base(op.abs) === undefined &&
        (op.now === null || (op.now === undefined && (await _lstat(op.abs)) === null))
      ),
    );
    const rels = ops.filter((_, i) => absent[i]).map((op) => op.rel);
    for (const rel of await copiedUp(this.#tree.upper, rels)) {
      this.#removedSince.add(join(this.#tree.root, rel));
    }
  }

  /** Paths the layer copied up from the tree that the tree no longer holds. */
  readonly #removedSince = new Set<string>();

  /** Learn what the folder `dir` and each folder above it are. */
  async #around(dir: string): Promise<void> {
    for (let d = dir;; d = dirname(d)) {
      if (this.#checked.has(d)) break; // its parents were checked with it
      this.#checked.add(d);
      await this.#folder(d);
      if (d === "/") break;
    }
  }

  /** What `op` becomes. */
  async judge(op: LayerOp): Promise<Judged> {
    const out: Judged = { apply: [], kept: [], conflicts: [] };
    const refuse = (why: string) => ({ ...out, refuse: why });
    if (op.kind === "other") return refuse(_otherWhy(op));
    for (const dir of this.#making.keys()) {
      if (op.abs !== dir && !op.abs.startsWith(dir + "/")) continue;
      if (!this.#making.get(dir)) this.#making.set(dir, this.#makingRefusal(dir));
      const why = await this.#making.get(dir);
      if (!why) continue;
      if (this.#told.has(dir)) {
        return refuse(`part of making ${this.#o.shown(dir)} a git repository, refused`);
      }
      this.#told.add(dir);
      return refuse(why);
    }
    const kind: ChangeKind = op.kind === "prune" ? "dir" : op.kind;
    const v = judgeChange(op.abs, kind, this.ctx);
    if (v.kind === "refuse") return refuse(v.why);
    if (op.kind === "symlink") {
      const why = await this.#linkRefusal(op.abs);
      if (why) return refuse(why);
    }
    // What the tree held when its batch was read, which the applier checks again before it
    // replaces anything (changed since: a conflict); else read now.
    const now = op.now === null ? null : op.nowInfo ?? await _lstat(op.abs);
    // The tree had it when the tool changed it, and it was removed since: the removal stays.
    if (!now && this.#removedSince.has(op.abs)) return { ...out, conflict: true };
    const nowDir = now?.isDirectory ?? false;
    if (now && (op.kind === "dir" || op.kind === "prune") !== nowDir && op.kind !== "remove") {
      const gone = judgeChange(op.abs, "remove", this.ctx);
      if (gone.kind !== "apply") {
        return refuse(gone.kind === "refuse" ? gone.why : "it replaces git's own");
      }
    }
    if (v.kind === "git-ref") return { ...out, ref: true, apply: [{ ...op, gitDir: v.gitDir }] };
    if (v.kind === "git-config" && v.gitDir && op.kind === "remove" && now) {
      return refuse(
        "removing a repository's config is refused: git obeys it, and the user's " +
          "remotes and branches are there",
      );
    }
    if (nowDir && op.kind !== "dir") {
      let plan: RemovalPlan;
      try {
        plan = await planRemoval(op.abs, op.kind === "prune", this.#removalRules(op));
      } catch (err) {
        return refuse(`what it would remove cannot be read: ${(err as Error).message}`);
      }
      out.kept = plan.kept;
      out.conflicts = plan.conflicts;
      if (op.kind === "remove" || op.kind === "prune") {
        out.apply = plan.whole
          ? [{ ...op, judged: true }]
          : plan.remove.map((abs) => _removal(op, abs));
        return out;
      }
      // A file or link in place of the folder: all of it goes, or nothing.
      const k = plan.kept[0];
      if (k) return refuse(`it would remove ${this.#o.shown(k.abs)}: ${k.why}`);
      if (plan.conflicts.length) return { ...out, conflict: true };
    }
    if (op.kind === "prune") return out; // nothing of the tree's below it
    if (v.kind === "git-config" && op.kind === "write") {
      const fresh = v.gitDir !== "" && this.#making.has(v.gitDir);
      const before = !fresh && now?.isFile ? op.abs : undefined;
      const why = await configRefusal(before, op.upper);
      if (why) return refuse(why);
    }
    return { ...out, ...this.#mode(op, now) };
  }

  /** `op` with the mode to apply over the tree's `now`, and why it was masked. */
  #mode(op: LayerOp, now: Deno.FileInfo | null): { apply: LayerOp[]; masked?: string } {
    if ((op.kind !== "write" && op.kind !== "dir") || !op.entry) return { apply: [op] };
    const tree = now && (now.isFile || now.isDirectory)
      ? { dir: now.isDirectory, mode: (now.mode ?? 0) & 0o7777 }
      : null;
    const asked = op.entry.mode & 0o7777;
    const treeMode = tree?.mode;
    // A git directory or a protected folder keeps its mode: what reads it is not the tool's.
    if (tree?.dir && op.kind === "dir" && asked !== tree.mode && this.#guarded(op.abs)) {
      return {
        apply: [{ ...op, mode: tree.mode, treeMode }],
        masked: `mode ${asked.toString(8)} not applied: a git directory or protected folder ` +
          `keeps its mode (${tree.mode.toString(8)})`,
      };
    }
    const mode = maskedMode(asked, op.kind === "dir", tree, userUmask());
    return {
      apply: [{ ...op, mode, treeMode }],
      masked: mode === asked ? undefined : maskedWhy(asked, mode),
    };
  }

  /** Whether the folder `abs` is a git directory, a hooks folder, or a protected entry's. */
  #guarded(abs: string): boolean {
    if (this.ctx.gitDirs.has(abs) || this.ctx.hooksFolders.includes(abs)) return true;
    const rel = relative(this.ctx.workspace, abs);
    return matchPlanted(rel.startsWith("..") ? abs : rel, this.ctx.entries) !== undefined;
  }

  /** Why the link at `abs` is refused for where it leads, or undefined. */
  async #linkRefusal(abs: string): Promise<string | undefined> {
    const to = await this.#tree.resolve(abs);
    if (to === abs) return undefined;
    await this.#around(to);
    // Where it leads is judged for what runs or obeys it there, not for the trust base or PATH.
    const v = judgeChange(to, "write", { ...this.ctx, trust: [], pathDirs: [], grantPaths: [] });
    const inGit = [...this.ctx.gitDirs].some((d) => to === d || to.startsWith(d + "/")) ||
      to.split("/").includes(".git");
    if (v.kind === "apply" && !inGit) return undefined;
    const why = v.kind === "refuse" ? v.why : "git reads it as its own";
    return `it leads to ${this.#o.shown(to)}, and a link is judged as what it leads to: ${why}`;
  }

  #removalRules(op: LayerOp): RemovalRules {
    const { base, epoch } = this.#o.view;
    return {
      refusal: (abs) => {
        const v = judgeChange(abs, "remove", this.ctx);
        return v.kind === "refuse"
          ? v.why
          : v.kind !== "apply"
          ? "git's own (a ref, HEAD or the index is removed only by itself)"
          : undefined;
      },
      changed: (abs, e) => {
        const was = base(abs);
        // The epoch is read from the kernel's file clock (./_file_clock.ts): a change
        // stamped in its very tick counts as later (a false conflict is only kept).
        if (was === undefined) return Math.max(e.mtimeMs, e.ctimeMs) >= epoch;
        return !sameSig(_sig(e), was);
      },
      layer: op.kind === "prune"
        ? async (abs) => {
          if (!(await this.#tree.inLayer(abs))) return null;
          return (await this.#tree.after(abs)) === "dir" ? "dir" : "other";
        }
        : undefined,
    };
  }

  /** Learn what the folder `d` is: a git directory (before or after), a new repository's top. */
  async #folder(d: string): Promise<void> {
    const before = await isGitDir((n) => this.#tree.before(join(d, n)));
    const after = await isGitDir((n) => this.#tree.after(join(d, n)));
    if (before || after) this.ctx.gitDirs.add(d);
    if (after && !before) {
      this.#making.set(d, undefined); // judged once every operation is known
      if (basename(d) !== ".git") this.#userHooks(d);
    }
    const dotGit = join(d, ".git");
    if ((await this.#tree.after(dotGit)) !== null && (await this.#tree.before(dotGit)) === null) {
      this.#userHooks(d);
    }
  }

  /** The hooks folders that the user's own config gives a new repository whose hooks run in `top`. */
  #userHooks(top: string): void {
    for (const v of this.#userValues) {
      for (const f of hooksFoldersOf(v.value, top, this.#o.env)) {
        if (!this.ctx.hooksFolders.includes(f)) this.ctx.hooksFolders.push(f);
      }
    }
  }

  /**
   * Why the layer may not make `d` a git directory, for what the tree
   * already holds there and this settlement does not change (its own
   * changes are judged one by one): `""` when it may.
   */
  async #makingRefusal(d: string): Promise<string> {
    const kept = async (abs: string) => {
      if ((await this.#tree.before(abs)) === null) return false;
      if (this.#ops.has(abs)) return false;
      for (let p = dirname(abs); p.length >= d.length; p = dirname(p)) {
        const k = this.#ops.get(p);
        if (k && k !== "dir") return false; // removed, made again or replaced, and judged so
      }
      return true;
    };
    const what = `it would make ${this.#o.shown(d)} a git repository (HEAD, objects, refs)`;
    const entries = this.ctx.entries;
    for (const name of ["config", "config.worktree"]) {
      if (!hasEntry(entries, `.git/${name}`) || !(await kept(join(d, name)))) continue;
      const why = await configRefusal(undefined, join(d, name));
      if (why) return `${what} whose ${name}, already in the tree, is refused: ${why}`;
    }
    const never = [
      "commondir",
      "gitdir",
      "objects/info/alternates",
      "objects/info/http-alternates",
    ];
    for (
      const name of [...never, "modules", "worktrees", "rebase-merge", "rebase-apply", "sequencer"]
    ) {
      const guarded = never.includes(name) || hasEntry(entries, `.git/${name}/`);
      if (guarded && await kept(join(d, name))) {
        return `${what} that holds ${name}, which git obeys`;
      }
    }
    const hooks = [join(d, "hooks")];
    const top = basename(d) === ".git" ? dirname(d) : d;
    for (const v of this.#userValues) hooks.push(...hooksFoldersOf(v.value, top, this.#o.env));
    for (const h of hooks) {
      if (h === join(d, "hooks") && !hasEntry(entries, ".git/hooks/")) continue;
      const kind: Kind | null = await this.#tree.before(h);
      const names = kind === "dir" ? await _names(h) : kind ? [""] : [];
      for (const n of names) {
        const at = n ? join(h, n) : h;
        if (h === join(d, "hooks") && n.endsWith(".sample")) continue;
        if (await kept(at)) return `${what} whose hooks folder already holds ${this.#o.shown(at)}`;
      }
    }
    return "";
  }
}

async function _lstat(abs: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(abs);
  } catch {
    return null;
  }
}

async function _names(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) out.push(e.name);
  } catch { /* gone */ }
  return out;
}

/** A removal of the tree's `abs`, part of what `op` (a folder's removal) comes to. */
function _removal(op: LayerOp, abs: string): LayerOp {
  const rel = op.rel + abs.slice(op.abs.length);
  return {
    rel,
    abs,
    upper: join(op.upper, abs.slice(op.abs.length)),
    kind: "remove",
    judged: true,
  };
}

function _otherWhy(op: LayerOp): string {
  switch (op.entry?.notUtf8) {
    case "folder":
      return "its name is not UTF-8: corral applies names as UTF-8 only, so this folder and " +
        "everything in it were not applied";
    case "removal":
      return "its name is not UTF-8: corral cannot name it to the file system, so its removal " +
        "was not applied";
    case "entry":
      return "its name is not UTF-8: corral applies names as UTF-8 only, so it was not applied";
  }
  return "not a file, folder or link";
}

function _sig(e: RawEntry): Sig {
  const kind = e.type === "f"
    ? "file"
    : e.type === "d"
    ? "dir"
    : e.type === "l"
    ? "symlink"
    : "other";
  return { kind, ino: e.ino, size: e.size, mtimeMs: e.mtimeMs };
}
