/**
 * Where git runs hooks from, for every repository of a write root, as the
 * user's own git will see it: each repository's `core.hooksPath` (its
 * `config`, `config.worktree`), the user's system, global and XDG config
 * (`GIT_CONFIG_SYSTEM`, `GIT_CONFIG_GLOBAL`, `~/.gitconfig`,
 * `$XDG_CONFIG_HOME/git/config`), and every file they include, whatever
 * the include's condition (so more is found, never less). Each file is read
 * by git itself (`git config --file F --no-includes --list -z`), never by a
 * parser of corral's; corral only follows the `include.path` and
 * `includeIf.*.path` values git gives.
 *
 * A relative `core.hooksPath` is taken from where git runs hooks: the top
 * of the repository's worktree, or its git directory when bare. So
 * `core.hooksPath = .githooks` in `~/.gitconfig` makes each repository's own
 * `.githooks/` a hooks folder, also in a repository a tool makes. husky's
 * `.husky/_` runs the scripts beside it: its parent counts too. A hooks
 * folder that is a worktree's top itself (or above it) protects only the
 * names git runs there (`pre-commit`, …).
 *
 * @module
 */
import { basename, dirname, join, resolve } from "node:path";
import { isWithin } from "../base/mod.ts";
import { configEntries } from "./_git_rules.ts";
import type { TreeRepo } from "./_git_dirs.ts";

/** Where the user's git finds its own config. */
export interface GitEnv {
  home?: string;
  xdgConfigHome?: string;
  /** `GIT_CONFIG_GLOBAL`, `GIT_CONFIG_SYSTEM` when set. */
  global?: string;
  system?: string;
}

/** The hooks git runs by name (githooks(5)). */
export const HOOK_NAMES: readonly string[] = [
  "applypatch-msg",
  "pre-applypatch",
  "post-applypatch",
  "pre-commit",
  "pre-merge-commit",
  "prepare-commit-msg",
  "commit-msg",
  "post-commit",
  "pre-rebase",
  "post-checkout",
  "post-merge",
  "pre-push",
  "pre-receive",
  "update",
  "proc-receive",
  "post-receive",
  "post-update",
  "reference-transaction",
  "push-to-checkout",
  "pre-auto-gc",
  "post-rewrite",
  "sendemail-validate",
  "fsmonitor-watchman",
  "p4-changelist",
  "p4-prepare-changelist",
  "p4-post-changelist",
  "p4-pre-submit",
  "post-index-change",
];

/** The user's git environment, from this process's own. */
export function userGitEnv(): GitEnv {
  const get = (k: string) => {
    try {
      return Deno.env.get(k) || undefined;
    } catch {
      return undefined;
    }
  };
  return {
    home: get("HOME"),
    xdgConfigHome: get("XDG_CONFIG_HOME"),
    global: get("GIT_CONFIG_GLOBAL"),
    system: get("GIT_CONFIG_SYSTEM"),
  };
}

/** The user's own config files, each whether it exists or not. */
export function userConfigFiles(env: GitEnv): string[] {
  const out = [env.system ?? "/etc/gitconfig"];
  if (env.global) out.push(env.global);
  if (env.home) out.push(join(env.home, ".gitconfig"));
  const xdg = env.xdgConfigHome ?? (env.home ? join(env.home, ".config") : undefined);
  if (xdg) out.push(join(xdg, "git", "config"));
  return out;
}

/** One `core.hooksPath` value and the file that sets it. */
export interface HooksPathValue {
  value: string;
  file: string;
}

/** What git's config says for a set of repositories. */
export interface HooksFacts {
  /** Folders (and, for a hooks folder at a worktree's top, hook files) git runs hooks from. */
  folders: string[];
  /** Every config file git reads there (included files too). */
  configFiles: string[];
  /** The user's own `core.hooksPath` values (system, global, XDG, their includes). */
  userValues: HooksPathValue[];
}

/**
 * The hooks folders and config files of `repos`, with the user's own
 * config (`env`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hooksFacts } from "./hooks_folders.ts";
 * const d = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.mkdir(`${d}/web/.git`, { recursive: true });
 * await Deno.writeTextFile(`${d}/web/.git/config`, "[core]\n\thooksPath = .husky/_\n");
 * await Deno.writeTextFile(`${d}/.gitconfig`, "[core]\n\thooksPath = .githooks\n");
 * const repo = { gitDir: `${d}/web/.git`, commonDir: `${d}/web/.git`, top: `${d}/web` };
 * const f = await hooksFacts([repo], { home: d, system: `${d}/none` });
 * assert.ok(f.folders.includes(`${d}/web/.husky/_`));
 * assert.ok(f.folders.includes(`${d}/web/.husky`));
 * assert.ok(f.folders.includes(`${d}/web/.githooks`));
 * ```
 */
export async function hooksFacts(repos: TreeRepo[], env: GitEnv): Promise<HooksFacts> {
  const user = await readClosure(userConfigFiles(env), env);
  const userValues = _values(user);
  const folders = new Set<string>();
  const files = new Set(user.map((r) => r.file));
  for (const repo of repos) {
    const own = await readClosure([
      join(repo.commonDir, "config"),
      join(repo.commonDir, "config.worktree"),
      join(repo.gitDir, "config.worktree"),
    ], env);
    for (const r of own) files.add(r.file);
    for (const v of [..._values(own), ...userValues]) {
      for (const f of hooksFoldersOf(v.value, repo.top, env)) folders.add(f);
    }
  }
  return { folders: [...folders], configFiles: [...files], userValues };
}

/**
 * The folders (or hook files) that the `core.hooksPath` value `value` makes
 * git run hooks from, in a repository whose hooks run in `top`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hooksFoldersOf } from "./hooks_folders.ts";
 * assert.deepEqual(hooksFoldersOf(".githooks", "/ws/app", {}), ["/ws/app/.githooks"]);
 * assert.deepEqual(hooksFoldersOf("~/hooks", "/ws", { home: "/h" }), ["/h/hooks"]);
 * assert.ok(hooksFoldersOf(".", "/ws", {}).includes("/ws/pre-commit"));
 * ```
 */
export function hooksFoldersOf(value: string, top: string, env: GitEnv): string[] {
  const path = _expand(value, env);
  if (path === undefined) return [];
  const h = resolve(top, path);
  const out = [h];
  if (basename(h) === "_") out.push(dirname(h));
  return out.flatMap((f) => isWithin(top, f) ? HOOK_NAMES.map((n) => join(f, n)) : [f]);
}

function _expand(value: string, env: GitEnv): string | undefined {
  if (value === "~" || value.startsWith("~/")) {
    return env.home ? join(env.home, value.slice(1)) : undefined;
  }
  if (value.startsWith("~") || value.startsWith("%(prefix)/")) return undefined;
  return value;
}

function _values(read: ReadonlyArray<{ file: string; entries: string[] }>): HooksPathValue[] {
  const out: HooksPathValue[] = [];
  for (const r of read) {
    for (const e of r.entries) {
      const nl = e.indexOf("\n");
      if (e.slice(0, nl) === "core.hookspath" && e.slice(nl + 1)) {
        out.push({ value: e.slice(nl + 1), file: r.file });
      }
    }
  }
  return out;
}

/** Files read at most per closure, and include levels followed (git's own limit is 10). */
const _MAX_FILES = 200, _MAX_DEPTH = 10;

/**
 * `files` and every file they include (any condition), each with its
 * entries as git reads it; missing or unreadable files hold none.
 */
export async function readClosure(
  files: string[],
  env: GitEnv,
): Promise<Array<{ file: string; entries: string[] }>> {
  const out: Array<{ file: string; entries: string[] }> = [];
  const seen = new Set<string>();
  let level = files.map((f) => resolve(f));
  for (let depth = 0; level.length && depth <= _MAX_DEPTH; depth++) {
    const next: string[] = [];
    for (const file of level) {
      if (seen.has(file) || seen.size >= _MAX_FILES) continue;
      seen.add(file);
      const entries = await _read(file);
      out.push({ file, entries });
      for (const e of entries) {
        const nl = e.indexOf("\n");
        if (!/^include(if\..*)?\.path$/s.test(e.slice(0, nl))) continue;
        const p = _expand(e.slice(nl + 1), env);
        if (p) next.push(resolve(dirname(file), p));
      }
    }
    level = next;
  }
  return out;
}

const _cache = new Map<string, { sig: string; entries: string[] }>();

/** A config file's entries, cached by its inode, size and time. */
async function _read(file: string): Promise<string[]> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.stat(file);
  } catch {
    return [];
  }
  if (!st.isFile) return [];
  const sig = `${st.ino}:${st.size}:${st.mtime?.getTime()}:${st.ctime?.getTime?.()}`;
  const hit = _cache.get(file);
  if (hit?.sig === sig) return hit.entries;
  let entries: string[];
  try {
    entries = await configEntries(file);
  } catch {
    entries = []; // git cannot read it: the user's git stops there too
  }
  if (_cache.size > 2000) _cache.clear();
  _cache.set(file, { sig, entries });
  return entries;
}
