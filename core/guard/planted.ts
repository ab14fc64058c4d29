/**
 * Files that other programs run or obey: git hooks and config, editor and
 * agent settings, shell rc files, `.envrc`. A tool that may write the
 * workspace could plant code in one of them, and the user's next ordinary
 * `git status`, editor start or shell would run it outside any sandbox.
 * The files tools refuse them by name at any depth ({@link
 * assertNotPlanted}); whatever else a tool writes there (jailed bash, a
 * hosted server) stays in its sandbox's own write layer and is refused when
 * the layer is applied to the tree (core/layers/change_rules.ts). Nothing is
 * made on the host to hold their names.
 *
 * An entry is a path relative to a root, `/`-separated; a trailing `/` marks
 * a folder. The operator adds entries with `"protect"` and lifts default ones
 * with `"unprotect"` in permissions.json (core/config/policy.ts).
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "./_posix_path.ts";
import { PermissionDeniedError } from "../tool/mod.ts";

/**
 * The entry that stands for the folder a repository names in its
 * `core.hooksPath` (e.g. `.husky`), when that lies inside a write grant.
 */
export const HOOKS_PATH_ENTRY = "core.hooksPath";

/** One default entry and what runs or obeys it. */
export interface PlantedDefault {
  /** Relative path; a trailing `/` marks a folder. */
  entry: string;
  /** What reads it, for messages and the README. */
  why: string;
}

/** The entries protected unless the operator lifts one (see docs/security.md, "Protected files"). */
export const PLANTED_DEFAULTS: readonly PlantedDefault[] = Object.freeze([
  { entry: ".git/hooks/", why: "git runs its hooks" },
  { entry: ".git/config", why: "git obeys it (core.fsmonitor, core.hooksPath, filters, …)" },
  { entry: ".git/config.worktree", why: "git obeys it like .git/config" },
  { entry: ".git/commondir", why: "git takes its config and hooks from the folder it names" },
  { entry: ".git/modules/", why: "git obeys the config and runs the hooks of submodules" },
  { entry: ".git/worktrees/", why: "git obeys the config of linked worktrees" },
  { entry: ".git/rebase-merge/", why: "git rebase --continue runs the exec lines of its todo" },
  { entry: ".git/rebase-apply/", why: "git am and rebase --continue obey what it holds" },
  { entry: ".git/sequencer/", why: "git cherry-pick and revert --continue run its todo" },
  { entry: ".gitmodules", why: "git clones and updates what it names" },
  { entry: HOOKS_PATH_ENTRY, why: "git runs the hooks in the folder it names (e.g. .husky/)" },
  { entry: ".pre-commit-config.yaml", why: "pre-commit runs what it names" },
  { entry: ".vscode/", why: "VS Code runs its tasks and obeys its settings" },
  { entry: ".idea/", why: "JetBrains IDEs run its run configurations" },
  { entry: ".zed/", why: "Zed runs its tasks and obeys its settings" },
  { entry: ".cursor/", why: "Cursor obeys its rules and MCP servers" },
  { entry: ".claude/", why: "Claude Code runs its hooks and MCP servers" },
  { entry: ".codex/", why: "Codex obeys its config" },
  { entry: ".gemini/", why: "Gemini CLI obeys its settings and MCP servers" },
  { entry: ".devcontainer/", why: "dev containers run its commands" },
  { entry: ".envrc", why: "direnv runs it on cd" },
  { entry: ".mcp.json", why: "agents start the MCP servers it names" },
  { entry: "mise.toml", why: "mise runs its hooks and tasks" },
  { entry: ".mise.toml", why: "mise runs its hooks and tasks" },
  { entry: ".config/mise.toml", why: "mise runs its hooks and tasks" },
  { entry: ".config/mise/", why: "mise runs the hooks and tasks of its config there" },
  { entry: ".npmrc", why: "npm obeys it (script-shell, node-options)" },
  { entry: ".yarnrc.yml", why: "yarn runs the file its yarnPath names" },
  { entry: ".yarnrc", why: "yarn obeys it (yarn-path)" },
  { entry: ".exrc", why: "vim with 'exrc' runs it" },
  { entry: ".nvim.lua", why: "neovim with 'exrc' runs it" },
  { entry: ".nvimrc", why: "neovim with 'exrc' runs it" },
  { entry: ".bashrc", why: "bash runs it" },
  { entry: ".bash_profile", why: "bash runs it" },
  { entry: ".bash_login", why: "bash runs it" },
  { entry: ".profile", why: "login shells run it" },
  { entry: ".zshrc", why: "zsh runs it" },
  { entry: ".zshenv", why: "zsh runs it" },
  { entry: ".zprofile", why: "zsh runs it" },
  { entry: ".zlogin", why: "zsh runs it" },
  { entry: ".gitconfig", why: "git obeys it in a home folder" },
  { entry: ".config/git/", why: "git obeys its config there in a home folder, like .gitconfig" },
  { entry: ".vimrc", why: "vim runs it in a home folder" },
  { entry: ".ssh/", why: "ssh obeys its config and authorized_keys" },
]);

/** The default entries as plain strings. */
export const PLANTED_DEFAULT_ENTRIES: readonly string[] = Object.freeze(
  PLANTED_DEFAULTS.map((d) => d.entry),
);

/**
 * Check one operator entry; returns it normalised (`/`-separated, no `./`)
 * or throws a `TypeError` saying what is wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizeEntry } from "./planted.ts";
 * assert.equal(normalizeEntry("./.husky/"), ".husky/");
 * assert.throws(() => normalizeEntry("../x"), /inside/);
 * ```
 */
export function normalizeEntry(entry: string): string {
  if (entry === HOOKS_PATH_ENTRY) return entry;
  const dir = entry.endsWith("/");
  const parts = entry.split("/").filter((p) => p !== "" && p !== ".");
  if (entry.startsWith("/") || isAbsolute(entry)) {
    throw new TypeError(`"${entry}" must be relative (it applies inside every write grant)`);
  }
  if (parts.length === 0 || parts.some((p) => p === ".." || p.includes("\0"))) {
    throw new TypeError(`"${entry}" must name a path inside a folder (no "..", not empty)`);
  }
  return parts.join("/") + (dir ? "/" : "");
}

/**
 * The effective entries: the defaults without the lifted ones, plus the
 * operator's own.
 */
export function plantedEntries(extra: string[] = [], lifted: string[] = []): string[] {
  const off = new Set(lifted.map(_key));
  const out = PLANTED_DEFAULT_ENTRIES.filter((e) => !off.has(_key(e)));
  for (const e of extra) if (!out.some((o) => _key(o) === _key(e))) out.push(e);
  return out;
}

/** The path components of an entry (lower case: `.VSCode` on a case-folding disk is `.vscode`). */
export function entryParts(entry: string): string[] {
  return _key(entry).split("/");
}

/**
 * The entry that `rel` (a path relative to a root, `/`- or `sep`-separated)
 * falls under at any depth: the path is the entry, lies inside it, or is a
 * folder on the way to it (renaming or replacing `.git` replaces
 * `.git/hooks`). Undefined when none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchPlanted } from "./planted.ts";
 * const e = [".git/hooks/", ".envrc"];
 * assert.equal(matchPlanted("sub/.git/hooks/pre-commit", e), ".git/hooks/");
 * assert.equal(matchPlanted(".git", e), ".git/hooks/");
 * assert.equal(matchPlanted("a/.ENVRC", e), ".envrc");
 * assert.equal(matchPlanted(".git/HEAD", e), undefined);
 * ```
 */
export function matchPlanted(rel: string, entries: readonly string[]): string | undefined {
  const c = rel.split(/[\\/]+/).filter((p) => p !== "" && p !== ".").map((p) => p.toLowerCase());
  for (const entry of entries) {
    if (entry === HOOKS_PATH_ENTRY) continue;
    const e = _partsOf(entry);
    for (let i = 0; i < c.length; i++) {
      const n = Math.min(e.length, c.length - i);
      let same = true;
      for (let k = 0; k < n && same; k++) same = c[i + k] === e[k];
      if (same) return entry;
    }
  }
  return undefined;
}

const _parts = new Map<string, string[]>();

/** {@link entryParts}, worked out once per entry: every change a settlement judges asks. */
function _partsOf(entry: string): string[] {
  let p = _parts.get(entry);
  if (!p) {
    if (_parts.size > 10_000) _parts.clear();
    _parts.set(entry, p = entryParts(entry));
  }
  return p;
}

/** What a write tool's context holds that {@link assertNotPlanted} needs. */
export interface PlantedContext {
  workspace: string;
  grant: { write: string[]; planted?: string[] };
}

/**
 * Refuse a write to a protected path: `real` (the resolved path the tool
 * will write) and `given` (as the caller wrote it) are checked against the
 * grant's entries (the defaults when the grant names none), at any depth
 * below the workspace or the write root holding it, and against the
 * repository's `core.hooksPath` when that lies inside. Throws a
 * {@link PermissionDeniedError} naming the entry and the operator's setting.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertNotPlanted } from "./planted.ts";
 * const ctx = { workspace: "/ws", grant: { write: ["/ws"] } };
 * assert.throws(() => assertNotPlanted("/ws/.git/config", ".git/config", ctx), /protected/);
 * assertNotPlanted("/ws/src/a.ts", "src/a.ts", ctx);
 * ```
 */
export function assertNotPlanted(real: string, given: string, ctx: PlantedContext): void {
  const entries = ctx.grant.planted ?? PLANTED_DEFAULT_ENTRIES;
  const roots = [ctx.workspace, ...ctx.grant.write].map((r) => resolve(r));
  const rels = [given.replaceAll("\\", "/")];
  for (const root of roots) {
    if (_inside(real, root)) rels.push(relative(root, real));
  }
  for (const rel of rels) {
    const entry = matchPlanted(isAbsolute(rel) ? rel.slice(1) : rel, entries);
    if (entry) throw _refusal(given, entry);
  }
  if (!entries.includes(HOOKS_PATH_ENTRY)) return;
  for (const root of roots) {
    for (const hooks of hooksFolders(root)) {
      if (_inside(real, hooks) || _inside(hooks, real)) {
        throw _refusal(given, HOOKS_PATH_ENTRY, relative(root, hooks) + "/");
      }
    }
  }
}

function _refusal(given: string, entry: string, shown = entry): PermissionDeniedError {
  const why = PLANTED_DEFAULTS.find((d) => d.entry === entry)?.why ?? "the operator protects it";
  const lift = `"unprotect": ["${entry}"]`;
  return new PermissionDeniedError(
    `path ${JSON.stringify(given)} is protected: "${shown}" holds what other programs run or ` +
      `obey outside the sandbox (${why}). Only the operator can lift this, with ${lift} in ` +
      `permissions.json.`,
  );
}

/**
 * The folders git runs hooks from that `core.hooksPath` names for the
 * repository at `root`, when they lie inside it: the folder itself and,
 * for husky's layout (`.husky/_`, which runs the scripts beside it), its
 * parent. This is the files tools' early refusal by name, inside the
 * sandbox, where no git runs: it reads the root's own `.git/config` only.
 * What reaches the tree is judged after the call with every repository's
 * config and the user's own, read by git (core/layers/hooks_folders.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hooksFolders } from "./planted.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.mkdir(`${ws}/.git`);
 * await Deno.writeTextFile(`${ws}/.git/config`, "[core]\n\thooksPath = .husky/_\n");
 * assert.deepEqual(hooksFolders(ws), [`${ws}/.husky/_`, `${ws}/.husky`]);
 * ```
 */
export function hooksFolders(root: string, home?: string): string[] {
  const hp = configuredHooksPath(root, home);
  if (!hp || hp === root || !_inside(hp, root) || _inside(hp, join(root, ".git"))) return [];
  return basename(hp) === "_" && dirname(hp) !== root ? [hp, dirname(hp)] : [hp];
}

/**
 * The folder the repository at `root` names in `core.hooksPath` (its
 * `.git/config`, and the user's own git config when `home` is given), as an
 * absolute path; undefined when none is set or `root` holds no repository.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configuredHooksPath } from "./planted.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.mkdir(`${ws}/.git`);
 * await Deno.writeTextFile(`${ws}/.git/config`, "[core]\n\thooksPath = .husky\n");
 * assert.equal(configuredHooksPath(ws), `${ws}/.husky`);
 * ```
 */
export function configuredHooksPath(root: string, home?: string): string | undefined {
  const files = [join(root, ".git", "config")];
  if (home) files.unshift(join(home, ".gitconfig"), join(home, ".config", "git", "config"));
  let found: string | undefined;
  for (const f of files) {
    let text: string;
    try {
      text = Deno.readTextFileSync(f);
    } catch {
      continue;
    }
    const v = _hooksPathIn(text);
    if (v !== undefined) found = v; // the repository's own wins (read last)
  }
  if (!found) return undefined;
  const expanded = home && found.startsWith("~/") ? join(home, found.slice(2)) : found;
  return resolve(root, expanded);
}

function _hooksPathIn(text: string): string | undefined {
  let section = "";
  let value: string | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const head = line.match(/^\[\s*([A-Za-z0-9.-]+)/);
    if (head) section = head[1].toLowerCase();
    const m = line.match(/^hookspath\s*=\s*(.*?)\s*$/i);
    if (section === "core" && m) value = m[1].replace(/^"(.*)"$/, "$1");
  }
  return value || undefined;
}

function _inside(child: string, root: string): boolean {
  return child === root || child.startsWith(root.endsWith(sep) ? root : root + sep);
}

function _key(entry: string): string {
  return entry.replace(/\/+$/, "").toLowerCase();
}
