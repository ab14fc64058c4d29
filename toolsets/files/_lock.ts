/**
 * One read-modify-write at a time per file. Every call of the files tools
 * that write runs in the same sandbox process (they share their letters),
 * so a lock per real path there serializes concurrent edits of one file;
 * a change made by anyone else between the read and the write is caught
 * by comparing the file's size and modification time, and the call fails
 * instead of losing it.
 *
 * @module
 */

const _locks = new Map<string, Promise<void>>();

/**
 * Run `fn` while holding the lock of `path`; calls for the same path run
 * one after the other, in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withFileLock } from "./_lock.ts";
 * const order: number[] = [];
 * const slow = withFileLock("/x", async () => {
 *   await new Promise((r) => setTimeout(r, 20));
 *   order.push(1);
 * });
 * const fast = withFileLock("/x", () => Promise.resolve(void order.push(2)));
 * await Promise.all([slow, fast]);
 * assert.deepEqual(order, [1, 2]);
 * ```
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const before = _locks.get(path) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => release = r);
  const chained = before.then(() => mine);
  _locks.set(path, chained);
  await before;
  try {
    return await fn();
  } finally {
    release();
    if (_locks.get(path) === chained) _locks.delete(path);
  }
}

/** Size and mtime of a file, to tell whether it changed since it was read. */
export function fileStamp(info: Deno.FileInfo): string {
  return `${info.size}:${info.mtime?.getTime() ?? 0}`;
}

/**
 * Throw when the file at `path` is no longer the one read (`stamp`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertUnchanged, fileStamp } from "./_lock.ts";
 * const f = await Deno.makeTempFile();
 * const stamp = fileStamp(await Deno.stat(f));
 * await assertUnchanged(f, stamp, "f");
 * await Deno.writeTextFile(f, "changed");
 * await assert.rejects(assertUnchanged(f, stamp, "f"), /changed since it was read/);
 * ```
 */
export async function assertUnchanged(path: string, stamp: string, shown: string): Promise<void> {
  let now = "";
  try {
    now = fileStamp(await Deno.stat(path));
  } catch { /* gone */ }
  if (now !== stamp) {
    throw new Error(`"${shown}" changed since it was read; read it again and retry`);
  }
}
