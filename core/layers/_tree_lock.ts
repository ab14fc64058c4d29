/**
 * One apply at a time per write root: within a corral process by a queue,
 * and across corral processes of the same user by an exclusive `flock` on
 * a lock file named after the root (in the layers' `locks` folder, never in
 * the user's tree). Two applies then never interleave their checks and
 * writes, so a concurrent change is seen as a conflict, not lost.
 *
 * @module
 */
import { join } from "node:path";
import { sha256Hex } from "../base/mod.ts";

const _queues = new Map<string, Promise<void>>();

/**
 * Run `fn` holding the lock of `root` (lock files in `locks`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withTreeLock } from "./_tree_lock.ts";
 * const locks = await Deno.makeTempDir();
 * const order: number[] = [];
 * await Promise.all([1, 2, 3].map((n) =>
 *   withTreeLock("/ws", locks, async () => {
 *     order.push(n);
 *     await new Promise((r) => setTimeout(r, 5));
 *     order.push(-n);
 *   })
 * ));
 * assert.deepEqual(order, [1, -1, 2, -2, 3, -3]);
 * ```
 */
export async function withTreeLock<T>(
  root: string,
  locks: string,
  fn: () => Promise<T>,
): Promise<T> {
  const before = _queues.get(root) ?? Promise.resolve();
  let done = () => {};
  const mine = new Promise<void>((r) => done = r);
  const tail = before.then(() => mine);
  _queues.set(root, tail);
  await before;
  let file: Deno.FsFile | undefined;
  try {
    try {
      Deno.mkdirSync(locks, { recursive: true, mode: 0o700 });
      file = await Deno.open(join(locks, `${sha256Hex(root).slice(0, 32)}.lock`), {
        read: true,
        write: true,
        create: true,
      });
      await file.lock(true);
    } catch {
      // No lock file (a read-only cache): this process's queue still orders its own applies.
      file?.close();
      file = undefined;
    }
    return await fn();
  } finally {
    try {
      await file?.unlock();
    } catch { /* closed below */ }
    file?.close();
    done();
    if (_queues.get(root) === tail) _queues.delete(root);
  }
}
