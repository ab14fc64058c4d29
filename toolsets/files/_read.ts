/**
 * Reading a checked file for the files toolset: regular files only, up to
 * a size cap, checked on the opened descriptor.
 *
 * Deno's own calls, not node:fs (whose first use costs a sandbox about
 * 55 ms to load). Deno cannot open with `O_NONBLOCK`, so a name that is a
 * FIFO, socket or device when checked is refused before it is opened, and
 * one swapped in between the check and the open is bounded: the open is
 * given {@link OPEN_WAIT_MS}, then the call fails (the blocked open holds
 * one thread of this sandbox, counted by its process limit, until the
 * sandbox ends).
 *
 * @module
 */
import { fsError } from "../../core/guard/mod.ts";

/** How long an open may block (only a FIFO swapped in after the check does). */
export const OPEN_WAIT_MS = 2000;

/**
 * Read the file at `real` (already checked with `resolveInside`); errors
 * name the file as the caller gave it (`shown`). The file is opened
 * without blocking and checked on the opened descriptor, so a swap after
 * the check changes nothing: only a regular file is read (never a FIFO, a
 * socket or a device), and never more than `maxBytes`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readChecked } from "./_read.ts";
 * const f = await Deno.makeTempFile();
 * await Deno.writeTextFile(f, "hi");
 * assert.ok((await readChecked(f, "f.txt")).bytes.length === 2);
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
  _regular(info.isFile, shown);
  _small(info.size, maxBytes, shown);
  const file = await _open(real, shown);
  try {
    // What counts is the file that was opened, not the name checked above.
    const st = file.statSync();
    if (st.isDirectory) throw new Error(`"${shown}" is a directory, not a file`);
    _regular(st.isFile, shown);
    _small(st.size, maxBytes, shown);
    const cap = Math.min(st.size, maxBytes);
    const buf = new Uint8Array(cap + 1);
    let got = 0;
    while (got <= cap) {
      // A regular file: reads do not block on other processes.
      const n = file.readSync(buf.subarray(got));
      if (n === null || n === 0) break;
      got += n;
    }
    _small(got, maxBytes, shown);
    return { info: { ...info, size: got }, bytes: buf.subarray(0, Math.min(got, cap)) };
  } catch (err) {
    // Our own refusals as they are; the runtime's errors named after the file.
    throw err instanceof Error && Object.getPrototypeOf(err) === Error.prototype
      ? err
      : fsError(err, shown);
  } finally {
    try {
      file.close();
    } catch { /* closed */ }
  }
}

/** Open for reading, refusing to wait more than {@link OPEN_WAIT_MS}. */
async function _open(real: string, shown: string): Promise<Deno.FsFile> {
  const opening = Deno.open(real, { read: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), OPEN_WAIT_MS);
  });
  try {
    const won = await Promise.race([opening, late]);
    if (won !== "late") return won;
  } catch (err) {
    throw fsError(err, shown);
  } finally {
    clearTimeout(timer);
  }
  opening.then((f) => f.close(), () => {});
  _regular(false, shown);
  throw new Error("unreachable");
}

function _regular(isFile: boolean, shown: string): void {
  if (!isFile) {
    throw new Error(
      `"${shown}" is not a regular file (a FIFO, socket or device): the files tools read ` +
        `regular files only`,
    );
  }
}

function _small(size: number, maxBytes: number, shown: string): void {
  if (size > maxBytes) {
    throw new Error(`file "${shown}" is too large (${size} bytes, limit ${maxBytes})`);
  }
}
