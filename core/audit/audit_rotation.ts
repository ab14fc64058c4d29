/**
 * The audit log rotates by size, so that its total on disk stays under a
 * bound whoever calls: the current file and {@link AUDIT_ROTATED_FILES}
 * older ones (`PATH.1` newest … `PATH.4` oldest), each at most a fifth of
 * the total. Several processes may append to one log: rotation happens
 * under an exclusive lock on the current file, and only when that file is
 * still the full one once the lock is held, so two writers never rotate
 * twice.
 *
 * @module
 */

/** Default total of the audit log and its rotated files: 1 GiB (`audit_max_bytes`). */
export const DEFAULT_AUDIT_MAX_BYTES = 1024 ** 3;
/** How many rotated files are kept beside the current one. */
export const AUDIT_ROTATED_FILES = 4;

/**
 * The rotated files of the log at `path`, newest first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rotatedPaths } from "./audit_rotation.ts";
 * assert.deepEqual(rotatedPaths("/l/a.jsonl").slice(0, 2), ["/l/a.jsonl.1", "/l/a.jsonl.2"]);
 * ```
 */
export function rotatedPaths(path: string): string[] {
  return Array.from({ length: AUDIT_ROTATED_FILES }, (_, i) => `${path}.${i + 1}`);
}

/**
 * Rotate the log at `path` when it holds its share of `maxBytes` (a fifth);
 * 0 never rotates. Synchronous, like the writes (a stat per line, ≈ 1 µs).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rotateIfFull } from "./audit_rotation.ts";
 * const path = `${await Deno.makeTempDir()}/audit.jsonl`;
 * await Deno.writeTextFile(path, "x".repeat(300));
 * rotateIfFull(path, 1000); // a fifth is 200 bytes: full
 * assert.equal((await Deno.stat(`${path}.1`)).size, 300);
 * await assert.rejects(Deno.stat(path));
 * ```
 */
export function rotateIfFull(path: string, maxBytes: number): void {
  if (maxBytes <= 0) return;
  const segment = Math.max(1, Math.floor(maxBytes / (AUDIT_ROTATED_FILES + 1)));
  let file: Deno.FsFile;
  try {
    if (Deno.statSync(path).size < segment) return;
    file = Deno.openSync(path, { read: true });
  } catch {
    return; // gone: rotated by another process
  }
  try {
    file.lockSync(true);
    const now = Deno.statSync(path);
    // Another writer rotated it while this one waited for the lock: nothing to do.
    if (now.ino !== file.statSync().ino || now.size < segment) return;
    const rotated = rotatedPaths(path);
    for (let i = rotated.length - 1; i > 0; i--) _move(rotated[i - 1], rotated[i]);
    _move(path, rotated[0]);
  } finally {
    file.close(); // releases the lock
  }
}

function _move(from: string, to: string): void {
  try {
    Deno.renameSync(from, to);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}
