// The generators and the harness of tests/e2e/layers/judge_property_test.ts: trees (files, folders, links,
// hard links to files outside the tree, a nested repository, protected entries), a tool's
// changes run for real in an overlay over the tree, the user's edits, and snapshots.
import { basename, dirname, join, relative } from "node:path";
import fc from "fast-check";

// ── The names a case draws from (a small universe, so that changes meet what is there) ──

const DIRS = ["d", "d/e", "g", "r", "r/src"];
const FILES = ["a.txt", "b.txt", "d/x.txt", "d/e/y.txt", "g/z.txt", "r/n.txt", "r/src/m.txt"];
/** Protected entries (core/guard/planted.ts), a nested repository's config and hooks among them. */
const PROTECTED = [
  ".envrc",
  "d/.envrc",
  ".vscode/settings.json",
  "d/.npmrc",
  ".gitmodules",
  "r/.git/config",
  "r/.git/hooks/pre-commit",
];
const HARD = ["h1", "d/h2"];
const LINKS = ["l1", "d/l2"];
const NEW = ["new.txt", "d/new.txt", "q", "d/q", "g/w/n.txt", "b.git"];
/** Every path a change may name. */
const PATHS = [...DIRS, ...FILES, ...PROTECTED, ...HARD, ...LINKS, ...NEW, "r/.git", ".vscode"];
/** Where a link may lead (relative to the case folder; made relative to the link's folder). */
const TARGETS = ["a.txt", "d", "d/x.txt", ".envrc", "r/.git", "r/.git/config", "@outside/o1"];
const MODES = [0o600, 0o644, 0o700, 0o755, 0o777, 0o666, 0o1777, 0o4755, 0o2775];

/** A tree to build. */
export interface TreeSpec {
  files: Array<{ path: string; text: string; mode: number }>;
  dirs: string[];
  links: Array<{ path: string; target: string }>;
  /** Hard links to files outside the tree (`o1`, `o2`). */
  hard: Array<{ path: string; outside: string }>;
  /** A nested repository at `r` (its `.git` with HEAD, objects, refs, config). */
  repo: boolean;
}

/** One change a tool makes (a shell command run in the overlay). */
export type ToolOp =
  | { k: "write" | "append"; p: string; c: string }
  | { k: "rm" | "rmdir" | "remake" | "mkdir" | "gitdir"; p: string }
  | { k: "chmod"; p: string; mode: number }
  | { k: "link"; p: string; t: string }
  | { k: "mv"; p: string; q: string };

/** One edit the user makes meanwhile, resolved against the tree as the user finds it. */
export interface UserEdit {
  k: "modify" | "create" | "delete";
  i: number;
}

const _word = fc.stringMatching(/^[a-z]{1,6}$/);

/** Trees. */
export const treeArb: fc.Arbitrary<TreeSpec> = fc.record({
  files: fc.uniqueArray(
    fc.record({
      path: fc.constantFrom(...FILES, ...PROTECTED),
      text: _word,
      mode: fc.constantFrom(0o644, 0o600, 0o755, 0o664),
    }),
    { selector: (f) => f.path, minLength: 1, maxLength: 9 },
  ),
  dirs: fc.subarray(DIRS),
  links: fc.uniqueArray(
    fc.record({ path: fc.constantFrom(...LINKS), target: fc.constantFrom(...TARGETS) }),
    { selector: (l) => l.path, maxLength: 2 },
  ),
  hard: fc.uniqueArray(
    fc.record({ path: fc.constantFrom(...HARD), outside: fc.constantFrom("o1", "o2") }),
    { selector: (h) => h.path, maxLength: 2 },
  ),
  repo: fc.boolean(),
});

const _path = fc.constantFrom(...PATHS);

/** A tool's changes. */
export const opsArb: fc.Arbitrary<ToolOp[]> = fc.array(
  fc.oneof(
    fc.record({ k: fc.constantFrom("write" as const, "append" as const), p: _path, c: _word }),
    fc.record({
      k: fc.constantFrom(
        "rm" as const,
        "rmdir" as const,
        "remake" as const,
        "mkdir" as const,
        "gitdir" as const,
      ),
      p: _path,
    }),
    fc.record({ k: fc.constant("chmod" as const), p: _path, mode: fc.constantFrom(...MODES) }),
    fc.record({ k: fc.constant("link" as const), p: _path, t: fc.constantFrom(...TARGETS) }),
    fc.record({ k: fc.constant("mv" as const), p: _path, q: _path }),
  ),
  { minLength: 1, maxLength: 7 },
);

/** The user's edits meanwhile. */
export const editsArb: fc.Arbitrary<UserEdit[]> = fc.array(
  fc.record({ k: fc.constantFrom("modify", "create", "delete"), i: fc.nat(50) }),
  { maxLength: 3 },
);

// ── Building ──

/** Build `spec` in `dir` (the case folder), its outside files in `out`; all dated 10 s back. */
export function buildTree(spec: TreeSpec, dir: string, out: string): void {
  Deno.mkdirSync(dir, { recursive: true });
  Deno.mkdirSync(out, { recursive: true });
  Deno.writeTextFileSync(`${out}/o1`, "outside one\n");
  Deno.writeTextFileSync(`${out}/o2`, "outside two\n");
  const parent = (p: string) => Deno.mkdirSync(dirname(join(dir, p)), { recursive: true });
  const clear = (p: string) => {
    try {
      Deno.removeSync(join(dir, p), { recursive: true });
    } catch { /* nothing there */ }
  };
  for (const d of spec.dirs) Deno.mkdirSync(join(dir, d), { recursive: true });
  if (spec.repo) {
    for (const d of ["r/.git/objects", "r/.git/refs/heads", "r/.git/hooks"]) {
      Deno.mkdirSync(join(dir, d), { recursive: true });
    }
    Deno.writeTextFileSync(join(dir, "r/.git/HEAD"), "ref: refs/heads/main\n");
    Deno.writeTextFileSync(join(dir, "r/.git/config"), "[core]\n\trepositoryformatversion = 0\n");
  }
  for (const f of spec.files) {
    parent(f.path);
    Deno.writeTextFileSync(join(dir, f.path), `${f.text}\n`);
    Deno.chmodSync(join(dir, f.path), f.mode);
  }
  for (const h of spec.hard) {
    parent(h.path);
    clear(h.path);
    Deno.linkSync(join(out, h.outside), join(dir, h.path));
  }
  for (const l of spec.links) {
    parent(l.path);
    clear(l.path);
    Deno.symlinkSync(linkTarget(l.target, l.path, dir, out), join(dir, l.path));
  }
  // Dated back: nothing of the tree looks changed since the sandbox's view began.
  const past = new Date(Date.now() - 10_000);
  for (const e of [...walk(dir), ...walk(out)].reverse()) {
    if (e.kind !== "symlink") Deno.utimeSync(e.abs, past, past);
  }
  Deno.utimeSync(dir, past, past);
}

/** A link's target: relative to its folder, or into the outside folder. */
function linkTarget(target: string, at: string, dir: string, out: string): string {
  const from = dirname(join(dir, at));
  return target.startsWith("@outside/")
    ? relative(from, join(out, target.slice(9)))
    : relative(from, join(dir, target)) || ".";
}

/**
 * A mount namespace of the tests' own, where each batch of cases gets a fresh overlay mounted
 * over the workspace itself (the options of core/jail/launcher.ts; the tree's paths, links
 * included, read there as in a sandbox) and the outside folder is an empty tmpfs (as the
 * sandbox's namespace leaves it out: a write through a link leading there goes nowhere). The
 * tool's changes are made by this process through `/proc/PID/root`, in that namespace: the
 * kernel's overlay makes the upper layer (copy-ups, whiteouts, opaque folders), one syscall
 * each, no process started per change.
 */
export class ToolNamespace {
  readonly pid: number;
  readonly #child: Deno.ChildProcess;
  readonly #w: WritableStreamDefaultWriter<Uint8Array>;
  readonly #r: ReadableStreamDefaultReader<string>;

  private constructor(
    child: Deno.ChildProcess,
    pid: number,
    r: ReadableStreamDefaultReader<string>,
  ) {
    this.#child = child;
    this.pid = pid;
    this.#w = child.stdin.getWriter();
    this.#r = r;
  }

  /** A namespace whose `outside` is hidden. */
  static async start(outside: string): Promise<ToolNamespace> {
    const root = Deno.uid() === 0;
    const loop = 'mount -t tmpfs none "$1" || exit 1; echo "$$"; ' +
      'while read -r cmd; do if eval "$cmd" 2>&1; then echo ok; else echo failed; fi; done';
    const child = new Deno.Command("unshare", {
      // (unshare makes the new mount namespace's propagation private.)
      args: [...(root ? ["-m"] : ["-Urm"]), "sh", "-c", loop, "tool", outside],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
      env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
      clearEnv: true,
    }).spawn();
    const r = child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(_lines()).getReader();
    const first = await r.read();
    if (first.done) throw new Error("the tests' mount namespace did not start");
    return new ToolNamespace(child, Number(first.value), r);
  }

  /** Run `cmd` (a shell command line) in the namespace; throws with its output on failure. */
  async run(cmd: string): Promise<void> {
    await this.#w.write(new TextEncoder().encode(cmd + "\n"));
    const said: string[] = [];
    for (;;) {
      const { value, done } = await this.#r.read();
      if (done) throw new Error(`the tests' namespace ended: ${said.join("\n")}`);
      if (value === "ok") return;
      if (value === "failed") throw new Error(`${cmd}: ${said.join("\n")}`);
      said.push(value);
    }
  }

  /** Mount an overlay of `root` (upper layer `layer/u`) over `root` itself. */
  mount(root: string, layer: string): Promise<void> {
    const opts = Deno.uid() === 0
      ? "redirect_dir=off,metacopy=off,index=off,xino=off,volatile"
      : "userxattr,metacopy=off,index=off,xino=off,volatile";
    return this.run(
      `mount -t overlay overlay -o 'lowerdir=${root},upperdir=${layer}/u,workdir=${layer}/w,` +
        `${opts}' '${root}'`,
    );
  }

  /**
   * Unmount the overlay over `root`. Where it is busy, it is detached (and said on stderr), so
   * that one case's failure never leaves an overlay under the next case's: stacked, every later
   * mount fails ("maximum fs stacking depth exceeded") and hides the first failure's cause.
   */
  umount(root: string): Promise<void> {
    return this.run(
      `umount '${root}' || { echo "umount failed; detached" >&2; umount -l '${root}'; }`,
    );
  }

  /** `abs` as the namespace sees it. */
  at(abs: string): string {
    return `/proc/${this.pid}/root${abs}`;
  }

  /** End the namespace. */
  async close(): Promise<void> {
    await this.#w.close().catch(() => {});
    await this.#child.status;
  }
}

function _lines(): TransformStream<string, string> {
  let buf = "";
  return new TransformStream({
    transform(chunk, c) {
      buf += chunk;
      for (let nl; (nl = buf.indexOf("\n")) >= 0; buf = buf.slice(nl + 1)) {
        c.enqueue(buf.slice(0, nl));
      }
    },
  });
}

/**
 * Make `ops` as a tool's shell would (`printf > p`, `rm -f`, `rm -rf`, `mkdir -p`, `chmod`,
 * `ln -sfn`, `mv -f`), in the case folder `dir` (as the namespace sees it; `tree` and `out`
 * are the case's folders as the tree has them, for link targets). A change that fails (a
 * missing folder, a name in the way) is skipped, as the shell's would be.
 */
export function makeChanges(ops: ToolOp[], dir: string, tree: string, out: string): void {
  const at = (p: string) => join(dir, p);
  const lst = (p: string) => {
    try {
      return Deno.lstatSync(p);
    } catch {
      return null;
    }
  };
  const isDir = (p: string) => {
    try {
      return Deno.statSync(p).isDirectory;
    } catch {
      return false;
    }
  };
  for (const o of ops) {
    const p = at(o.p);
    try {
      switch (o.k) {
        case "write":
        case "append":
          Deno.writeTextFileSync(p, `${o.c}\n`, { append: o.k === "append" });
          break;
        case "rm":
          if (!lst(p)?.isDirectory) Deno.removeSync(p);
          break;
        case "rmdir":
          Deno.removeSync(p, { recursive: true });
          break;
        case "remake":
          if (lst(p)) Deno.removeSync(p, { recursive: true });
          Deno.mkdirSync(p, { recursive: true });
          Deno.writeTextFileSync(`${p}/made.txt`, "made\n");
          break;
        case "mkdir":
          Deno.mkdirSync(p, { recursive: true });
          break;
        case "gitdir":
          Deno.mkdirSync(`${p}/objects`, { recursive: true });
          Deno.mkdirSync(`${p}/refs/heads`, { recursive: true });
          Deno.writeTextFileSync(`${p}/HEAD`, "ref: refs/heads/main\n");
          Deno.writeTextFileSync(
            `${p}/config`,
            "[core]\n\tfsmonitor = touch /tmp/corral-property-pwned\n",
          );
          break;
        case "chmod":
          Deno.chmodSync(p, o.mode);
          break;
        case "link": {
          const target = linkTarget(o.t, o.p, tree, out);
          const dest = lst(p)?.isDirectory ? join(p, basename(target)) : p;
          if (lst(dest) && !lst(dest)!.isDirectory) Deno.removeSync(dest);
          Deno.symlinkSync(target, dest);
          break;
        }
        case "mv": {
          const dest = isDir(at(o.q)) ? join(at(o.q), basename(o.p)) : at(o.q);
          if (!lst(p) || dest === p || dest.startsWith(p + "/")) break;
          _move(p, dest);
          break;
        }
      }
    } catch { /* as the shell's command would fail */ }
  }
}

/** `mv`: a rename, or (a folder of the lower layer: EXDEV without redirect_dir) copy and remove. */
function _move(from: string, to: string): void {
  try {
    Deno.renameSync(from, to);
    return;
  } catch (err) {
    if (!(err instanceof Error) || !/EXDEV|cross-device/i.test(err.message)) throw err;
  }
  const copy = (a: string, b: string) => {
    const st = Deno.lstatSync(a);
    if (st.isSymlink) Deno.symlinkSync(Deno.readLinkSync(a), b);
    else if (st.isFile) Deno.copyFileSync(a, b);
    else if (st.isDirectory) {
      Deno.mkdirSync(b);
      for (const e of Deno.readDirSync(a)) copy(join(a, e.name), join(b, e.name));
    }
    if (!st.isSymlink) Deno.chmodSync(b, (st.mode ?? 0o644) & 0o7777);
  };
  // (An empty folder in the way goes, as rename's rule has it; a full one stops it.)
  try {
    if (Deno.lstatSync(to).isDirectory) Deno.removeSync(to);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  copy(from, to);
  Deno.removeSync(from, { recursive: true });
}

// ── Looking ──

/** What one path is. */
export interface Seen {
  abs: string;
  rel: string;
  kind: "file" | "dir" | "symlink" | "other";
  mode: number;
  ino: number;
  mtime: number;
  /** A file's content, a link's target. */
  data?: string;
}

/** Every path under `dir` (not `dir` itself), parents first. */
export function walk(dir: string, rel = ""): Seen[] {
  const out: Seen[] = [];
  let names: string[];
  try {
    names = [...Deno.readDirSync(join(dir, rel))].map((e) => e.name).sort();
  } catch {
    return out;
  }
  for (const n of names) {
    const r = rel ? `${rel}/${n}` : n;
    const abs = join(dir, r);
    const st = Deno.lstatSync(abs);
    const kind = st.isSymlink ? "symlink" : st.isFile ? "file" : st.isDirectory ? "dir" : "other";
    out.push({
      abs,
      rel: r,
      kind,
      mode: (st.mode ?? 0) & 0o7777,
      ino: st.ino ?? 0,
      mtime: st.mtime?.getTime() ?? 0,
      ...(kind === "file" ? { data: Deno.readTextFileSync(abs) } : {}),
      ...(kind === "symlink" ? { data: Deno.readLinkSync(abs) } : {}),
    });
    if (kind === "dir") out.push(...walk(dir, r));
  }
  return out;
}

/** {@link walk} as a map by path. */
export function snapshot(dir: string): Map<string, Seen> {
  return new Map(walk(dir).map((e) => [e.rel, e]));
}

/**
 * Make the user's `edits` in the case folder `dir` (after the tool ran, before the
 * settlement): returns what each edited path must hold after it (null: absent).
 */
export function userEdits(
  edits: UserEdit[],
  dir: string,
  isProtected: (rel: string) => boolean,
  hard: Set<string>,
): Map<string, string | null> {
  const want = new Map<string, string | null>();
  for (const [n, e] of edits.entries()) {
    const all = walk(dir);
    const mine = (s: Seen) => !isProtected(s.rel) && !hard.has(s.rel) && !want.has(s.rel);
    const files = all.filter((s) => s.kind === "file" && mine(s));
    const dirs = [{ rel: "" }, ...all.filter((s) => s.kind === "dir" && mine(s))];
    if (e.k === "create") {
      const d = dirs[e.i % dirs.length].rel;
      const rel = d ? `${d}/user-${n}.txt` : `user-${n}.txt`;
      if (isProtected(rel)) continue;
      Deno.writeTextFileSync(join(dir, rel), `the user's new file ${n}\n`);
      want.set(rel, `the user's new file ${n}\n`);
      continue;
    }
    if (files.length === 0) continue;
    const f = files[e.i % files.length];
    if (e.k === "delete") {
      Deno.removeSync(f.abs);
      want.set(f.rel, null);
    } else {
      Deno.writeTextFileSync(f.abs, `the user's edit ${n}\n`, { append: true });
      want.set(f.rel, `${f.data}the user's edit ${n}\n`);
    }
  }
  return want;
}
