/**
 * Stopping a child process as a polite caller does: SIGTERM, then SIGKILL
 * when it has not ended after a grace period; resolves once it has ended.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stopChild } from "./stop_child.ts";
 * const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
 * await stopChild(child);
 * assert.equal((await child.status).signal, "SIGTERM");
 * await stopChild(child); // already ended: nothing to do
 * ```
 *
 * @module
 */

/** SIGTERM `child`, SIGKILL it after `graceMs` if it still runs, and wait for its end. */
export async function stopChild(child: Deno.ChildProcess, graceMs = 5_000): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch { /* ended already */ }
  const late = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* ended meanwhile */ }
  }, graceMs);
  await child.status;
  clearTimeout(late);
}
