/**
 * A file's stamp: its size, inode, modification and change times. A file
 * with the stamp it had when corral last read it holds what it held then:
 * the change time cannot be set back by anyone but the clock, so a file
 * rewritten and given its old modification time has another stamp. A file
 * changed within the last 3 s has none (its writes may still share the
 * stamp's second). No imports: the host bundle's check (core/cli/
 * host_bundle.ts) runs before anything else is loaded.
 *
 * @module
 */

/** Files changed this recently are always read again. */
export const RACY_MS = 3000;

/**
 * The stamp of `path` now, or undefined (missing, or changed within the
 * last 3 s: then it must be read).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileStamp } from "./file_stamp.ts";
 * const file = await Deno.makeTempFile();
 * assert.equal(fileStamp(file), undefined); // just written
 * assert.equal(fileStamp("/no/such/file"), undefined);
 * ```
 */
export function fileStamp(path: string): string | undefined {
  let st: Deno.FileInfo;
  try {
    st = Deno.statSync(path);
  } catch {
    return undefined;
  }
  const mtime = st.mtime?.getTime();
  const ctime = st.ctime?.getTime();
  if (mtime === undefined || ctime === undefined) return undefined;
  if (Date.now() - Math.max(mtime, ctime) < RACY_MS) return undefined;
  return `${st.size}:${st.ino ?? ""}:${mtime}:${ctime}`;
}
