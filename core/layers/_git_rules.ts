/**
 * What a tool may change in a git repository's own files, judged by what
 * it wrote (./change_rules.ts sends these here):
 *
 * - **config** (`.git/config`, `config.worktree`): every key whose values
 *   changed (added, changed or removed) must be a harmless one (identity,
 *   remotes and branches with plain URLs, core formatting settings); a
 *   change of any other key (`core.fsmonitor`, `core.hooksPath`,
 *   `core.sshCommand`, filters, aliases, `include.path`, …) refuses the
 *   whole file. Parsed by git itself (`git config --list -z`), never by a
 *   parser of corral's that a crafted file could fool.
 * - **refs, `HEAD` and the index**: applied unless they would make the
 *   user's own git write out a protected file: a ref (or `HEAD`) that moves
 *   to a commit whose tree differs from the old one in a protected path,
 *   or an index whose entry for a protected path changed, is refused (so
 *   `git reset --hard`, `git checkout .` or `git stash` never bring a
 *   planted hook or `.envrc` into the user's tree).
 *
 * Both need the host's `git`; without it such changes are refused, saying so.
 *
 * @module
 */
import { join } from "node:path";
import { matchPlanted } from "../guard/mod.ts";

/** Keys a tool may change in a repository's config (lower-case, subsections as `*`). */
const _SAFE_KEYS: readonly RegExp[] = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath|compression|loosecompression|abbrev|commentchar)$/,
  /^extensions\.objectformat$/,
  /^remote\.[^\n]*\.(url|pushurl|fetch|push|tagopt|prune|mirror)$/,
  /^branch\.[^\n]*\.(remote|merge|rebase|pushremote)$/,
  /^user\.(name|email)$/,
  /^init\.defaultbranch$/,
  /^(pull\.(rebase|ff)|push\.default|fetch\.prune|merge\.ff|gc\.auto)$/,
  /^(color|advice|i18n)\.[a-z.]+$/,
];

/** A URL git would hand to a transport helper (`ext::cmd`, `foo::…`) or a command. */
const _HELPER_URL = /^[a-z0-9+.-]+::|^-/i;

let _git: string | undefined | null = null;

/** The host's `git`, or undefined. */
export function hostGit(): string | undefined {
  if (_git !== null) return _git;
  for (const p of ["/usr/bin/git", "/bin/git", "/usr/local/bin/git"]) {
    try {
      if (Deno.statSync(p).isFile) return _git = p;
    } catch { /* not there */ }
  }
  return _git = undefined;
}

async function _runGit(args: string[], env: Record<string, string> = {}) {
  const git = hostGit();
  if (!git) throw new Error("git is not installed on the host, so corral cannot check it");
  const out = await new Deno.Command(git, {
    args: ["-c", "safe.directory=*", "-c", "core.fsmonitor=false", ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: {
      PATH: "/usr/bin:/bin",
      HOME: "/nonexistent",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_NO_REPLACE_OBJECTS: "1",
      GIT_OPTIONAL_LOCKS: "0",
      LC_ALL: "C",
      ...env,
    },
  }).output();
  return { ok: out.success, text: new TextDecoder().decode(out.stdout) };
}

/**
 * The config `file` as git reads it, its includes not followed: `key\nvalue`
 * entries (keys as git names them: section and name lower-case). Empty when
 * `file` is undefined; throws when git cannot read it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configEntries } from "./_git_rules.ts";
 * const d = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${d}/c`, "[core]\n\thooksPath = .githooks\n");
 * assert.deepEqual(await configEntries(`${d}/c`), ["core.hookspath\n.githooks"]);
 * ```
 */
export async function configEntries(file: string | undefined): Promise<string[]> {
  if (!file) return [];
  const r = await _runGit(["config", "--file", file, "--no-includes", "--list", "-z"]);
  if (!r.ok) throw new Error("git cannot read it as a config file");
  return r.text.split("\0").filter(Boolean);
}

/**
 * Why the change from config `before` (a file path, or undefined when new)
 * to `after` is refused, or undefined when every changed key is harmless.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configRefusal } from "./_git_rules.ts";
 * const d = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${d}/a`, "[core]\n\tbare = false\n");
 * await Deno.writeTextFile(`${d}/b`, "[core]\n\tbare = false\n[user]\n\tname = T\n");
 * await Deno.writeTextFile(`${d}/c`, "[core]\n\tbare = false\n\tfsmonitor = touch x\n");
 * assert.equal(await configRefusal(`${d}/a`, `${d}/b`), undefined);
 * assert.match((await configRefusal(`${d}/a`, `${d}/c`))!, /core\.fsmonitor/);
 * ```
 */
export async function configRefusal(
  before: string | undefined,
  after: string,
): Promise<string | undefined> {
  let old: string[], now: string[];
  try {
    [old, now] = await Promise.all([configEntries(before), configEntries(after)]);
  } catch (err) {
    return `its git config cannot be checked: ${(err as Error).message}`;
  }
  const count = (list: string[]) => {
    const m = new Map<string, number>();
    for (const e of list) m.set(e, (m.get(e) ?? 0) + 1);
    return m;
  };
  const a = count(old), b = count(now);
  const changed = new Set<string>();
  for (const e of new Set([...a.keys(), ...b.keys()])) {
    if (a.get(e) !== b.get(e)) changed.add(e.split("\n")[0]);
  }
  const bad = [...changed].filter((k) => !_SAFE_KEYS.some((re) => re.test(k.toLowerCase())));
  const urls = now.filter((e) => /^remote\..*\.(push)?url\n/.test(e) && !old.includes(e))
    .filter((e) => _HELPER_URL.test(e.slice(e.indexOf("\n") + 1)));
  for (const u of urls) bad.push(`${u.split("\n")[0]} (a transport helper or option)`);
  if (!bad.length) return undefined;
  return `its git config change sets keys git obeys to run programs or read other folders ` +
    `(${[...new Set(bad)].slice(0, 5).join(", ")}): only identity, remotes, branches and core ` +
    `formatting settings may change`;
}

/** A ref view: ref name (and `HEAD`) to its value (`sha` or `ref: target`). */
export type RefView = Map<string, string>;

/**
 * The refs of a git folder as files describe them: `read(rel)` gives a file's
 * text (or undefined), `loose` the relative paths of loose ref files.
 */
export function refView(read: (rel: string) => string | undefined, loose: string[]): RefView {
  const view: RefView = new Map();
  for (const line of (read("packed-refs") ?? "").split("\n")) {
    const m = line.match(/^([0-9a-f]{40,64}) (refs\/\S+)$/);
    if (m) view.set(m[2], m[1]);
  }
  for (const rel of ["HEAD", ...loose]) {
    const text = read(rel)?.trim();
    if (text) view.set(rel, text);
  }
  return view;
}

/** The commit a name resolves to in `view` (following `ref:` up to 5 times). */
export function resolveRef(view: RefView, name: string): string | undefined {
  let v = view.get(name);
  for (let i = 0; i < 5 && v?.startsWith("ref: "); i++) v = view.get(v.slice(5).trim());
  return v && /^[0-9a-f]{40,64}$/.test(v) ? v : undefined;
}

/**
 * Why moving the refs of the git folder `gitDir` from `before` to `after`
 * is refused (a protected path differs between an old and a new commit),
 * or undefined. The new commits' objects must be in `gitDir` already.
 */
export async function refsRefusal(
  gitDir: string,
  before: RefView,
  after: RefView,
  entries: readonly string[],
): Promise<string | undefined> {
  const names = new Set([...before.keys(), ...after.keys()]);
  for (const name of names) {
    const o = resolveRef(before, name), n = resolveRef(after, name);
    if (!n || o === n) continue;
    const r = o
      ? await _runGit([`--git-dir=${gitDir}`, "diff-tree", "-r", "-z", "--name-only", o, n])
      : await _runGit([`--git-dir=${gitDir}`, "ls-tree", "-r", "-z", "--name-only", n]);
    if (!r.ok) return `${name} would point at ${n.slice(0, 12)}, which git cannot read here`;
    const hit = r.text.split("\0").filter(Boolean).find((p) => matchPlanted(p, entries));
    if (hit) {
      return `${name} would move to a commit whose ${hit} differs: the user's own git ` +
        `(reset --hard, checkout, stash) would then write it out`;
    }
  }
  return undefined;
}

/**
 * Why replacing the index of `gitDir` (the file `before`, or undefined)
 * by the file `after` is refused: an entry for a protected path changed.
 */
export async function indexRefusal(
  gitDir: string,
  before: string | undefined,
  after: string,
  entries: readonly string[],
): Promise<string | undefined> {
  const list = async (index: string | undefined) => {
    if (!index) return new Map<string, string>();
    const r = await _runGit([`--git-dir=${gitDir}`, "ls-files", "-s", "-z"], {
      GIT_INDEX_FILE: index,
    });
    if (!r.ok) throw new Error("git cannot read the index");
    const m = new Map<string, string>();
    for (const e of r.text.split("\0").filter(Boolean)) {
      const tab = e.indexOf("\t");
      m.set(e.slice(tab + 1), e.slice(0, tab));
    }
    return m;
  };
  try {
    const [a, b] = await Promise.all([list(before), list(after)]);
    for (const [path, v] of b) {
      if (a.get(path) !== v && matchPlanted(path, entries)) {
        return `its index stages ${path}: the user's own git (checkout, reset) would write it out`;
      }
    }
  } catch (err) {
    return `its index cannot be checked: ${(err as Error).message}`;
  }
  return undefined;
}

/** The loose ref files under `gitDir/refs` (relative to `gitDir`). */
export function looseRefs(gitDir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    let list: Deno.DirEntry[];
    try {
      list = [...Deno.readDirSync(join(gitDir, rel))];
    } catch {
      return;
    }
    for (const e of list) {
      if (e.isDirectory) walk(`${rel}/${e.name}`);
      else if (e.isFile) out.push(`${rel}/${e.name}`);
    }
  };
  walk("refs");
  return out;
}
