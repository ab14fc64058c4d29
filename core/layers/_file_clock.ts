/**
 * The time as the kernel stamps it on files. A file's times come from the
 * kernel's coarse clock, a tick or more behind `Date.now()`, so a file the
 * user saved just before a sandbox's view began can carry a time after a
 * `Date.now()` taken then, and one saved just after can carry a time
 * before it. Reading the stamp of a file made now in a folder of corral's
 * compares like with like: a time at or after it is at or after now.
 *
 * @module
 */
import { join } from "node:path";

/**
 * The kernel's file time now, read from a file made (and removed) in `dir`;
 * `Date.now()` less a margin where `dir` cannot be written or stamps no
 * time (so that a time near it counts as later, never as earlier).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileClockNow } from "./_file_clock.ts";
 * const dir = await Deno.makeTempDir();
 * const before = fileClockNow(dir);
 * await Deno.writeTextFile(`${dir}/saved.txt`, "after");
 * const st = await Deno.stat(`${dir}/saved.txt`);
 * assert.ok(st.mtime!.getTime() >= before);
 * assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["saved.txt"]);
 * ```
 */
export function fileClockNow(dir: string): number {
  const probe = join(dir, `.clock-${crypto.randomUUID()}`);
  try {
    Deno.writeFileSync(probe, new Uint8Array(), { createNew: true });
    try {
      const t = Deno.lstatSync(probe).mtime?.getTime();
      if (t !== undefined) return t;
    } finally {
      Deno.removeSync(probe);
    }
  } catch { /* fall back on the wall clock */ }
  return Date.now() - _MARGIN;
}

/** How far behind `Date.now()` the kernel may stamp a file, in ms (a few ticks). */
const _MARGIN = 20;
