/**
 * Reading a checked file for the files toolset. Metadata and small files
 * use Deno's synchronous calls, which take microseconds where an async call
 * costs a trip through the thread pool; large files are read asynchronously
 * so that other calls in the same sandbox keep going.
 *
 * @module
 */
import { fsError } from "../../core/guard/paths.ts";

/** Files up to this size are read synchronously. */
export const SYNC_READ_BYTES = 256 * 1024;

/**
 * Stat and read the file at `real` (already checked with `resolveInside`);
 * errors name the file as the caller gave it (`shown`). Refuses folders and
 * files over `maxBytes`.
 *
 * @example
 * ```ts
 * import { readChecked } from "./_read.ts";
 * const f = await Deno.makeTempFile();
 * await Deno.writeTextFile(f, "hi");
 * console.assert((await readChecked(f, "f.txt")).bytes.length === 2);
 * ```
 */
export async function readChecked(
  real: string,
  shown: string,
  maxBytes = Infinity,
): Promise<{ info: Deno.FileInfo; bytes: Uint8Array }> {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(real);
  } catch (err) {
    throw fsError(err, shown);
  }
  if (info.isDirectory) throw new Error(`"${shown}" is a directory, not a file`);
  if (info.size > maxBytes) {
    throw new Error(`file "${shown}" is too large (${info.size} bytes, limit ${maxBytes})`);
  }
  try {
    const bytes = info.size <= SYNC_READ_BYTES
      ? Deno.readFileSync(real)
      : await Deno.readFile(real);
    return { info, bytes };
  } catch (err) {
    throw fsError(err, shown);
  }
}
