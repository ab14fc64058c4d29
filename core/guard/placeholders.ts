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
 * the other sandbox too. Another corral process does not see this count.
 *
 * @module
 */
import { dirname } from "node:path";

interface _Held {
  count: number;
  dir: boolean;
  text: string;
  /** The real path of its folder when it was made: a folder swapped since is never touched. */
  parent: string;
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
export function holdPlaceholders(specs: PlaceholderSpec[]): () => void {
  const mine: string[] = [];
  try {
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
      const text = s.text ?? "";
      const parent = dirname(s.path);
      // Made only where the name's folder is its real path (no symlink swapped in on the way).
      if (_real(parent) !== parent) throw new Error(`its folder is not at its real path any more`);
      if (s.dir) Deno.mkdirSync(s.path, { mode: 0o755 });
      else Deno.writeTextFileSync(s.path, text, { createNew: true, mode: 0o644 });
      const made = { count: 1, dir: s.dir, text, parent };
      if (_real(parent) !== parent) {
        Deno.removeSync(s.path);
        throw new Error(`its folder was swapped while it was made`);
      }
      _held.set(s.path, made);
      mine.push(s.path);
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

/** How many sandboxes of this process hold the placeholder at `path` (0: none). */
export function placeholderCount(path: string): number {
  return _held.get(path)?.count ?? 0;
}

function _release(paths: string[]): void {
  for (const p of paths) {
    const held = _held.get(p);
    if (!held || --held.count > 0) continue;
    _held.delete(p);
    if (!_isPlaceholder(p, held)) continue; // someone put something there: keep it
    try {
      Deno.removeSync(p);
    } catch { /* gone already, or not empty any more */ }
  }
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
