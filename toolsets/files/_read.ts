/**
 * Reading a checked file for the files toolset: regular files only, up to
 * a size cap, checked on the opened descriptor.
 *
 * @module
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { fsError } from "../../core/guard/paths.ts";

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
  let fh: FileHandle;
  try {
    fh = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    throw fsError(err, shown);
  }
  try {
    // What counts is the file that was opened, not the name checked above.
    const st = await fh.stat();
    if (st.isDirectory()) throw new Error(`"${shown}" is a directory, not a file`);
    _regular(st.isFile(), shown);
    _small(st.size, maxBytes, shown);
    const cap = Math.min(st.size, maxBytes);
    const buf = new Uint8Array(cap + 1);
    let got = 0;
    while (got <= cap) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, null);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    _small(got, maxBytes, shown);
    return { info: { ...info, size: got }, bytes: buf.subarray(0, Math.min(got, cap)) };
  } catch (err) {
    throw err instanceof Error && !(err as { code?: string }).code ? err : fsError(err, shown);
  } finally {
    await fh.close().catch(() => {});
  }
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
