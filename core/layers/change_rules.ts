/**
 * Which changes a sandbox made in its write layer may reach the user's
 * tree: judged by what was actually written, at any depth, when the layer
 * is applied (./settle_layers.ts). A change is refused when it would leave
 * behind something another program runs or obeys outside the sandbox, or
 * change what corral itself trusts:
 *
 * - anything inside the trust base (corral's install, config, caches, the
 *   policy and config in use, the audit log, plugin folders, the installed
 *   `corral` command);
 * - anything inside a folder on the user's PATH;
 * - a symlink at or above a grant path (the next start would bind whatever
 *   it points at);
 * - the protected entries (core/guard/planted.ts: editor, agent, shell and
 *   tool settings, `.envrc`, …) at any depth;
 * - inside any git repository (a `.git` folder, or a folder that is a git
 *   directory under any name, `ctx.gitDirs`: ./_git_dirs.ts; also one the
 *   tool made): hooks other than `*.sample`, `commondir`, `gitdir`,
 *   `modules/`, `worktrees/`, a rebase's or cherry-pick's todo lists, object
 *   alternates, any link, and a `.git` that is a file or a link. Its
 *   `config` is judged by content (./_git_rules.ts), and refs, `HEAD` and
 *   the index by what they would make the user's own git write out;
 * - inside a hooks folder (`ctx.hooksFolders`: ./hooks_folders.ts);
 *   a config file that git includes (`ctx.configFiles`) is judged by
 *   content as a repository's `config` is.
 *
 * A removal is judged here for its own path; what it takes below it is
 * judged path by path (./_removal_rules.ts).
 *
 * @module
 */
import { relative, sep } from "node:path";
import { isWithin } from "../base/mod.ts";
import { HOOKS_PATH_ENTRY, matchPlanted, PLANTED_DEFAULTS } from "../guard/mod.ts";

/** What kind of change is judged. */
export type ChangeKind = "write" | "dir" | "symlink" | "remove";

/** What the rules need to know. */
export interface RuleContext {
  /** The workspace (paths inside it are judged relative to it). */
  workspace: string;
  /** The write root the change lies in. */
  root: string;
  /** The protected entries in force (core/guard/planted.ts `plantedEntries`). */
  entries: readonly string[];
  /** The trust base, with what each path is. */
  trust: readonly { path: string; what: string }[];
  /** The folders on the user's PATH (absolute). */
  pathDirs: readonly string[];
  /** Every grant path of every sandbox (no symlink may be made at or above one). */
  grantPaths: readonly string[];
  /** Folders a repository's `core.hooksPath` names inside the tree (e.g. `.husky`). */
  hooksFolders: readonly string[];
  /** Folders that are git directories under another name than `.git` (before or after). */
  gitDirs?: ReadonlySet<string>;
  /** Config files git includes (from a repository's config or the user's). */
  configFiles?: ReadonlySet<string>;
}

/** A verdict: applied as is, refused (why), or judged by ./_git_rules.ts. */
export type Verdict =
  | { kind: "apply" }
  | { kind: "refuse"; why: string }
  | { kind: "git-config"; gitDir: string }
  | { kind: "git-ref"; gitDir: string };

const _APPLY: Verdict = { kind: "apply" };

/** Inside a repository's git folder: never applied, whatever the operator lifts. */
const _GIT_NEVER: ReadonlyArray<[RegExp, string]> = [
  [/^(commondir|gitdir)$/, "git takes its config and hooks from the folder it names"],
  [/^objects\/info\/(http-)?alternates$/, "git reads objects from the folders it names"],
];

/** Inside a git folder: `[pattern, the protected entry that guards it]`. */
const _GIT_ENTRIES: ReadonlyArray<[RegExp, string]> = [
  [/^hooks(\/.*)?$/, ".git/hooks/"],
  [/^modules(\/.*)?$/, ".git/modules/"],
  [/^worktrees(\/.*)?$/, ".git/worktrees/"],
  [/^rebase-merge(\/.*)?$/, ".git/rebase-merge/"],
  [/^rebase-apply(\/.*)?$/, ".git/rebase-apply/"],
  [/^sequencer(\/.*)?$/, ".git/sequencer/"],
];

const _REF = /^(HEAD|[A-Z_]+_HEAD|AUTO_MERGE|packed-refs|index|refs(\/.*)?)$/;

/**
 * The verdict on one change at `abs` (an absolute path in the tree).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { judgeChange } from "./change_rules.ts";
 * import { PLANTED_DEFAULT_ENTRIES } from "../guard/mod.ts";
 * const ctx = {
 *   workspace: "/ws", root: "/ws", entries: PLANTED_DEFAULT_ENTRIES, trust: [],
 *   pathDirs: ["/ws/bin"], grantPaths: ["/ws", "/ws/spool"], hooksFolders: [],
 * };
 * assert.equal(judgeChange("/ws/src/a.ts", "write", ctx).kind, "apply");
 * assert.equal(judgeChange("/ws/sub/.envrc", "write", ctx).kind, "refuse");
 * assert.equal(judgeChange("/ws/x/.git/hooks/pre-commit", "write", ctx).kind, "refuse");
 * assert.equal(judgeChange("/ws/x/.git/hooks/pre-commit.sample", "write", ctx).kind, "apply");
 * assert.equal(judgeChange("/ws/.git/config", "write", ctx).kind, "git-config");
 * assert.equal(judgeChange("/ws/.git/refs/heads/main", "write", ctx).kind, "git-ref");
 * assert.equal(judgeChange("/ws/spool", "symlink", ctx).kind, "refuse");
 * assert.equal(judgeChange("/ws/bin/git", "write", ctx).kind, "refuse");
 * ```
 */
export function judgeChange(abs: string, kind: ChangeKind, ctx: RuleContext): Verdict {
  for (const t of ctx.trust) {
    if (isWithin(abs, t.path)) return _refuse(`part of corral's trust base (${t.what})`);
  }
  for (const d of ctx.pathDirs) {
    if (isWithin(abs, d) && abs !== d) {
      return _refuse(`inside ${d}, a folder on the user's PATH: what is there runs outside`);
    }
  }
  if (kind === "symlink" || kind === "write") {
    const g = ctx.grantPaths.find((g) => g !== ctx.root && isWithin(g, abs));
    if (g) return _refuse(`a link or file here would change where the grant path ${g} points`);
  }
  const rel = _rel(abs, ctx);
  const entry = matchPlanted(rel, _plainEntries(ctx.entries));
  // Making (or removing) a folder on the way to an entry is harmless; what is in it is judged.
  // (Before git's rules: a repository made inside a protected entry is still inside it.)
  if (entry && !((kind === "dir" || kind === "remove") && _onTheWay(rel, entry))) {
    return _refuse(_entryWhy(entry));
  }
  const git = _gitVerdicts(abs, rel, kind, ctx);
  if (git) return git;
  for (const h of ctx.hooksFolders) {
    // A removal above a hooks folder is judged over what it takes (./_removal_rules.ts).
    if (isWithin(abs, h) || (kind !== "dir" && kind !== "remove" && isWithin(h, abs))) {
      return _refuse(`git runs the hooks in ${h} (core.hooksPath)`);
    }
  }
  if (ctx.configFiles?.has(abs)) {
    if (kind === "symlink") return _refuse("git reads this file as config: a link here is refused");
    if (kind === "write") return { kind: "git-config", gitDir: "" };
  }
  return _APPLY;
}

/**
 * The verdict on `abs` inside every git directory that holds it (a `.git`
 * by name, and `ctx.gitDirs`): the first refusal, else the innermost
 * repository's; undefined when no repository holds it.
 */
function _gitVerdicts(abs: string, rel: string, kind: ChangeKind, ctx: RuleContext) {
  const dirs: string[] = [];
  const named = _gitPart(rel);
  if (named) dirs.push(named.inner ? abs.slice(0, abs.length - named.inner.length - 1) : abs);
  for (const d of ctx.gitDirs ?? []) if (isWithin(abs, d) && !dirs.includes(d)) dirs.push(d);
  if (dirs.length === 0) return undefined;
  dirs.sort((a, b) => a.length - b.length);
  let last: Verdict = _APPLY;
  for (const d of dirs) {
    const v = _gitVerdict(abs, abs === d ? "" : abs.slice(d.length + 1), kind, ctx);
    if (v.kind === "refuse") return v;
    if (v.kind !== "apply") last = v;
  }
  return last;
}

function _gitVerdict(abs: string, inner: string, kind: ChangeKind, ctx: RuleContext): Verdict {
  const gitDir = inner ? abs.slice(0, abs.length - inner.length - 1) : abs;
  if (inner === "") {
    if (kind === "dir") return _APPLY;
    return _refuse(
      kind === "remove"
        ? "removing a repository's git folder (its history) is refused"
        : "a .git file or link points git at a folder elsewhere (its config and hooks)",
    );
  }
  if (kind === "symlink") {
    return _refuse("a link inside a git folder: git would read what it points at as its own");
  }
  for (const [re, why] of _GIT_NEVER) if (re.test(inner)) return _refuse(why);
  const config = /^(config(\.worktree)?)(\/|$)/.exec(inner);
  if (config) {
    const entry = `.git/${config[1]}`;
    if (!hasEntry(ctx.entries, entry)) return _APPLY;
    // git reads its config from a file: a folder there (or anything in one) is no config.
    if (kind === "dir" || inner !== config[1]) return _refuse(_entryWhy(entry));
    return { kind: "git-config", gitDir };
  }
  for (const [re, entry] of _GIT_ENTRIES) {
    if (!re.test(inner) || !hasEntry(ctx.entries, entry)) continue;
    // git never runs a *.sample hook, nor anything in a folder below hooks/.
    const sample = kind !== "dir" && /^hooks\/[^/]+\.sample$/.test(inner);
    if (entry === ".git/hooks/" && (inner === "hooks" && kind === "dir" || sample)) return _APPLY;
    return _refuse(_entryWhy(entry));
  }
  if (_REF.test(inner)) return kind === "dir" ? _APPLY : { kind: "git-ref", gitDir };
  return _APPLY;
}

/** The path relative to the workspace (else to the write root), `/`-separated. */
function _rel(abs: string, ctx: RuleContext): string {
  const base = isWithin(abs, ctx.workspace) ? ctx.workspace : ctx.root;
  return relative(base, abs).split(sep).join("/");
}

/** The first `.git` component of `rel`: the path inside it (`""` for `.git` itself). */
function _gitPart(rel: string): { inner: string } | undefined {
  const parts = rel.split("/");
  const i = parts.findIndex((p) => p.toLowerCase() === ".git");
  return i < 0 ? undefined : { inner: parts.slice(i + 1).join("/") };
}

const _plain = new WeakMap<readonly string[], string[]>();

/** The entries that are not git's, worked out once per list (a settlement judges each change). */
function _plainEntries(entries: readonly string[]): string[] {
  let p = _plain.get(entries);
  if (!p) _plain.set(entries, p = entries.filter((e) => !_isGitEntry(e)));
  return p;
}

function _isGitEntry(entry: string): boolean {
  return entry.toLowerCase().startsWith(".git/") || entry === HOOKS_PATH_ENTRY;
}

/** Whether `entry` is among the protected `entries` (a trailing `/` and case aside). */
export function hasEntry(entries: readonly string[], entry: string): boolean {
  return entries.some((e) => e.replace(/\/+$/, "").toLowerCase() === entry.replace(/\/+$/, ""));
}

/** Whether `rel` is a folder above `entry` (not the entry, nor inside it). */
function _onTheWay(rel: string, entry: string): boolean {
  const e = entry.replace(/\/+$/, "").toLowerCase().split("/");
  const c = rel.toLowerCase().split("/");
  const last = c.length - 1;
  // rel ends with a proper prefix of the entry's components.
  for (let n = 1; n < e.length; n++) {
    if (c.slice(last - n + 1).join("/") === e.slice(0, n).join("/")) return true;
  }
  return false;
}

function _entryWhy(entry: string): string {
  const why = PLANTED_DEFAULTS.find((d) => d.entry === entry)?.why ?? "the operator protects it";
  return `protected: "${entry}" holds what other programs run or obey outside the sandbox ` +
    `(${why}); the operator lifts this with "unprotect": ["${entry}"] in permissions.json`;
}

function _refuse(why: string): Verdict {
  return { kind: "refuse", why };
}
