/**
 * Placeholders: what corral makes on the host where a protected path is
 * missing, so that a sandbox can bind it read-only and nothing of that name
 * can be made inside: an empty folder, or an empty file (or one holding the
 * text a program needs, core/guard/planted.ts `PLACEHOLDER_TEXT`).
 *
 * They are counted per path within this process: two sandboxes over one
 * workspace share a placeholder, and it is removed when the last of them
 * ends, and only when it is still what corral made (an empty folder, a file
 * holding the placeholder text). Removing it earlier would lift the mount in
 * the other sandbox too: the kernel detaches a mount whose mount point is
 * removed, in every namespace. Across corral processes, every process that
 * binds a protected path holds a shared lock for it ({@link useProtected});
 * a placeholder is removed only when its maker gets the lock exclusively, so
 * a sandbox of another process that bound it keeps it.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { sha256Hex } from "./sha256.ts";

interface _Held {
  count: number;
  dir: boolean;
  text: string;
  /** The real path of its folder when it was made: a folder swapped since is never touched. */
  parent: string;
  /** Made (and so removed) by the shell, in the folder it entered. */
  shell?: boolean;
}

const _held = new Map<string, _Held>();

/** A missing path to hold a placeholder at. */
export interface PlaceholderSpec {
  path: string;
  dir: boolean;
  text?: string;
}

/**
 * Make (or share) a placeholder at every path of `specs` that is missing;
 * returns the function that gives them back. Throws an `Error` naming the
 * path when one cannot be made (the sandbox must not start unprotected);
 * those already made are given back first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { holdPlaceholders } from "./placeholders.ts";
 * const ws = await Deno.makeTempDir();
 * const release = holdPlaceholders([{ path: `${ws}/.envrc`, dir: false }]);
 * assert.ok(Deno.statSync(`${ws}/.envrc`).isFile);
 * release();
 * assert.throws(() => Deno.statSync(`${ws}/.envrc`));
 * ```
 */
export function holdPlaceholders(specs: PlaceholderSpec[], roots: string[] = []): () => void {
  const mine: string[] = [];
  try {
    const make: PlaceholderSpec[] = [];
    for (const s of specs) {
      const held = _held.get(s.path);
      if (held && _isPlaceholder(s.path, held)) {
        held.count++;
        mine.push(s.path);
        continue;
      }
      // (A held name that is no placeholder now was written to, or its folder swapped: its
      // owner's release decides; here it is bound as it is, or refused below.)
      if (_lstat(s.path)) continue; // there now: it is bound as it is
      // Made only where the name's folder is its real path (no symlink swapped in on the way).
      if (_real(dirname(s.path)) !== dirname(s.path)) {
        throw new Error(`its folder is not at its real path any more`);
      }
      make.push(s);
    }
    // In a write root itself (a mount point in every sandbox, which no tool can swap) they
    // are made here; deeper ones by the shell, in the folder it entered and checked.
    const direct = make.filter((s) => roots.includes(dirname(s.path)));
    for (const s of direct) {
      if (!_makeHere(s)) continue;
      _held.set(s.path, { count: 1, dir: s.dir, text: s.text ?? "", parent: dirname(s.path) });
      mine.push(s.path);
    }
    const deeper = make.filter((s) => !direct.includes(s));
    if (deeper.length > 0) {
      const made = _inFolders("make", deeper);
      for (const s of deeper) {
        if (!made.made.includes(s.path)) continue;
        const parent = dirname(s.path);
        _held.set(s.path, { count: 1, dir: s.dir, text: s.text ?? "", parent, shell: true });
        mine.push(s.path);
      }
      if (!made.ok) throw new Error(`its folder was swapped for a symlink meanwhile`);
    }
  } catch (err) {
    _release(mine);
    const at = specs.find((s) => !mine.includes(s.path))?.path ?? "";
    throw new Error(
      `cannot make the read-only placeholder "${at}" that keeps a protected path from being ` +
        `created in the sandbox: ${(err as Error).message}`,
    );
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    _release(mine);
  };
}

// Placeholders are made and removed by one shell that enters each folder and
// checks that it is exactly the folder named (`@ FOLDER`, then kind, name and
// text of each placeholder in it): each name is then taken in that open
// folder, so a folder on the way swapped for a symlink meanwhile never sends a
// creation or a removal elsewhere on the host.
const _IN = `o=$1; shift; umask 022; skip=0
while [ $# -gt 0 ]; do
  if [ "$1" = @ ]; then
    p=$2; shift 2; skip=0
    if ! { cd -P -- "$p" 2>/dev/null && [ "$(pwd -P)" = "$p" ]; }; then
      [ "$o" = make ] && exit 3; skip=1
    fi
    continue
  fi
  k=$1; n=$2; t=$3; shift 3
  [ "$skip" = 1 ] && continue
  if [ "$o" = make ]; then
    # A name taken meanwhile (another corral made it too) is bound as it is, like any other.
    if [ "$k" = d ]; then mkdir -- "$n" 2>/dev/null && echo "$p/$n" && continue
    else (set -C; printf '%s' "$t" > "$n") 2>/dev/null && echo "$p/$n" && continue; fi
    [ -e "$n" ] || [ -L "$n" ] || exit 4
  elif [ "$k" = d ]; then rmdir -- "$n" 2>/dev/null
  elif [ -f "$n" ] && [ ! -L "$n" ] && [ "$(cat -- "$n"; echo .)" = "$t." ]; then rm -f -- "$n"
  fi
done`;

/** Make `s` by its path (its folder cannot be swapped); false when the name was taken meanwhile. */
function _makeHere(s: PlaceholderSpec): boolean {
  try {
    if (s.dir) Deno.mkdirSync(s.path, { mode: 0o755 });
    else Deno.writeTextFileSync(s.path, s.text ?? "", { createNew: true, mode: 0o644 });
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return false; // bound as it is
    throw err;
  }
}

/** Make (`make`: the paths made) or remove (those still placeholders) `list`, by folder. */
function _inFolders(
  op: "make" | "remove",
  list: PlaceholderSpec[],
): { ok: boolean; made: string[] } {
  const args = ["-c", _IN, "corral-placeholders", op];
  const by = new Map<string, PlaceholderSpec[]>();
  for (const s of list) by.set(dirname(s.path), [...(by.get(dirname(s.path)) ?? []), s]);
  for (const [parent, specs] of by) {
    args.push("@", parent);
    for (const s of specs) args.push(s.dir ? "d" : "f", basename(s.path), s.text ?? "");
  }
  const out = new Deno.Command("/bin/sh", {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
  }).outputSync();
  const made = new TextDecoder().decode(out.stdout).split("\n").filter((n) => n !== "");
  return { ok: out.success, made };
}

/** How many sandboxes of this process hold the placeholder at `path` (0: none). */
export function placeholderCount(path: string): number {
  return _held.get(path)?.count ?? 0;
}

function _release(paths: string[]): void {
  const gone: PlaceholderSpec[] = [];
  const locks: Deno.FsFile[] = [];
  for (const p of paths) {
    const held = _held.get(p);
    if (!held || --held.count > 0) continue;
    _held.delete(p);
    if (!_isPlaceholder(p, held)) continue; // someone put something there: keep it
    // Another corral process binds it: removing it would lift its mount. It stays.
    const lock = _exclusive(p);
    if (!lock) continue;
    if (!held.shell) {
      try {
        Deno.removeSync(p);
      } catch { /* gone already, or not empty any more */ }
      lock.close();
      continue;
    }
    locks.push(lock);
    gone.push({ path: p, dir: held.dir, text: held.text });
  }
  try {
    if (gone.length > 0) _inFolders("remove", gone);
  } catch {
    /* cannot tell: they stay */
  } finally {
    for (const lock of locks) lock.close();
  }
}

const _used = new Map<string, { count: number; lock: Deno.FsFile }>();
let _lockDir: string | undefined;

/**
 * Hold a shared lock, seen by every corral process of this user, for each
 * protected path a sandbox binds (placeholders made here or by another
 * process, and existing entries alike); returns the function that gives
 * them back. While any process holds a path's lock, no corral removes a
 * placeholder there. Throws an `Error` naming the folder when the locks
 * cannot be had (the sandbox must not start unprotected).
 *
 * @example
 * ```ts
 * import { useProtected } from "./placeholders.ts";
 * const release = useProtected(["/ws/.envrc"]);
 * release();
 * ```
 */
export function useProtected(paths: string[]): () => void {
  const mine: string[] = [];
  try {
    for (const p of new Set(paths)) {
      const used = _used.get(p);
      if (used) used.count++;
      else {
        const lock = Deno.openSync(_lockFile(p), { read: true, write: true, create: true });
        lock.lockSync(false);
        _used.set(p, { count: 1, lock });
      }
      mine.push(p);
    }
  } catch (err) {
    _unuse(mine);
    throw new Error(
      `cannot lock the protected paths of a sandbox in "${_lockDir ?? "/tmp"}": ` +
        (err as Error).message,
    );
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    _unuse(mine);
  };
}

function _unuse(paths: string[]): void {
  for (const p of paths) {
    const used = _used.get(p);
    if (!used || --used.count > 0) continue;
    _used.delete(p);
    used.lock.close();
  }
}

/** The lock of `p` held exclusively (no other process binds it), or undefined. */
function _exclusive(p: string): Deno.FsFile | undefined {
  if (_used.has(p)) return undefined; // a sandbox of this process still binds it
  let lock: Deno.FsFile | undefined;
  try {
    lock = Deno.openSync(_lockFile(p), { read: true, write: true, create: true });
    if (lock.tryLockSync(true)) return lock;
  } catch { /* cannot tell: keep the placeholder */ }
  lock?.close();
  return undefined;
}

/**
 * The lock file of `p`, in a folder of this user's that no sandbox sees (the
 * host's temporary folder: every namespace has a /tmp of its own).
 */
function _lockFile(p: string): string {
  if (!_lockDir) {
    const uid = _uid();
    const dir = join("/tmp", `corral-${uid ?? "u"}-protected`);
    try {
      Deno.mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
    }
    const st = Deno.lstatSync(dir);
    if (!st.isDirectory || (uid !== null && st.uid !== uid) || ((st.mode ?? 0) & 0o077) !== 0) {
      throw new Error(`"${dir}" is not a private folder of this user`);
    }
    _lockDir = dir;
  }
  return join(_lockDir, sha256Hex(p));
}

function _isPlaceholder(p: string, held: _Held): boolean {
  if (_real(dirname(p)) !== held.parent) return false;
  const st = _lstat(p);
  if (!st || st.isSymlink) return false;
  try {
    if (held.dir) return st.isDirectory && [...Deno.readDirSync(p)].length === 0;
    return st.isFile && st.size === held.text.length && Deno.readTextFileSync(p) === held.text;
  } catch {
    return false;
  }
}

function _real(p: string): string | undefined {
  try {
    return Deno.realPathSync(p);
  } catch {
    return undefined;
  }
}

function _lstat(p: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(p);
  } catch {
    return undefined;
  }
}

/** This user's id (null where Deno may not tell it: no `--allow-sys`). */
function _uid(): number | null {
  try {
    return Deno.uid();
  } catch {
    return null;
  }
}
