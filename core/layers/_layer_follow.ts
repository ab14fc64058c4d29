/**
 * What processes a call left running write is settled too, while the
 * sandbox lives: the host watches its upper layers (inotify through
 * `Deno.watchFs`), and a short while after they change (at most one
 * settlement per {@link FOLLOW_QUIET_MS}), when no call of
 * that sandbox is running (a call's own end settles what it wrote), it
 * settles them and reports the changes apart (an audit line of their own).
 * Where the layers cannot be watched, such writes are settled at the next
 * call's end, or when the sandbox ends.
 *
 * @module
 */

/** How long after a change the layers are settled (ms). */
export const FOLLOW_QUIET_MS = 250;

/** What {@link followLayers} needs. */
export interface FollowOptions {
  /** The upper layers to watch. */
  uppers: string[];
  /** Whether a call runs in the sandbox now (then its end settles). */
  busy: () => boolean;
  /** Settle now. */
  settle: () => Promise<void>;
}

/**
 * Watch `uppers` and settle after each quiet spell; returns the stop.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { followLayers } from "./_layer_follow.ts";
 * const u = await Deno.makeTempDir();
 * let settled = 0;
 * const stop = followLayers({ uppers: [u], busy: () => false, settle: async () => { settled++; } });
 * await new Promise((r) => setTimeout(r, 100));
 * await Deno.writeTextFile(`${u}/a`, "x");
 * for (let i = 0; i < 50 && settled === 0; i++) await new Promise((r) => setTimeout(r, 50));
 * stop();
 * assert.ok(settled >= 1);
 * ```
 */
export function followLayers(o: FollowOptions): () => void {
  let watcher: Deno.FsWatcher;
  try {
    watcher = Deno.watchFs(o.uppers, { recursive: true });
  } catch {
    return () => {};
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const fire = () => {
    timer = undefined;
    if (stopped) return;
    // A call's end settles what it wrote; try again only if more comes.
    if (o.busy()) return;
    void o.settle().catch(() => {});
  };
  void (async () => {
    try {
      for await (const e of watcher) {
        // At most one settlement per spell: a process that writes on and on is followed too.
        if (e.kind === "access" || stopped || timer !== undefined) continue;
        timer = setTimeout(fire, FOLLOW_QUIET_MS);
      }
    } catch { /* closed */ }
  })();
  return () => {
    stopped = true;
    clearTimeout(timer);
    try {
      watcher.close();
    } catch { /* closed already */ }
  };
}
