/**
 * The Deno permissions the corral host runs with (`deno task corral`, the
 * compiled binary, the tests and benchmarks that start it). Tools never get
 * these: each sandbox narrows them to its grant. No `--allow-ffi`, ever.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HOST_PERMISSION_FLAGS } from "./host_flags.ts";
 * assert.ok(!HOST_PERMISSION_FLAGS.includes("--allow-ffi" as never));
 * ```
 *
 * @module
 */

/**
 * Why this host cannot start a process sandbox (its Deno flags do not grant
 * running the launcher shells and the deno binary: `deno run --allow-read
 * main.ts`), or undefined when it can.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { processSandboxMissing } from "./host_flags.ts";
 * assert.equal(processSandboxMissing(), undefined); // the tests run with -A
 * ```
 */
export function processSandboxMissing(): string | undefined {
  for (const command of ["/bin/bash", "/bin/sh", Deno.execPath()]) {
    let state = "denied";
    try {
      state = Deno.permissions.querySync({ name: "run", command }).state;
    } catch { /* not queryable: not granted */ }
    if (state !== "granted") {
      return `the host has no --allow-run (Deno does not grant run of "${command}"): ` +
        `no process sandbox can start`;
    }
  }
  return undefined;
}

/** The host's permission flags, as in deno.json's `corral` task (then {@link HOST_V8_FLAGS}). */
export const HOST_PERMISSION_FLAGS = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
] as const;

/**
 * The host's V8 flags, both for a host that serves all day and settles
 * large layers. `--heap-growing-percent=50`: after a full collection, V8
 * lets the heap grow by half of what stayed alive before the next one (by
 * default up to four times as much). corral's live heap stays about 40 MB
 * however long it serves, but V8's default let a day's session's garbage,
 * and the buffers that garbage holds outside the heap, pile up towards
 * 150 MB: the host's RSS grew 64% over 6,000 calls after their warm-up, and
 * 3% with this flag, at the same speed. `--max-semi-space-size=4` (MB): the
 * young generation, which V8 grows to several times that while a
 * settlement allocates fast and never gives back; settling 100,000 new
 * files raised the host's RSS by 112 MiB, and by 47–55 MiB with it, in
 * about the same time (bench/settle.ts and bench/soak.ts, measured
 * 2026-12-07; BENCHMARKS.md sections 12 and 13).
 */
export const HOST_V8_FLAGS = [
  "--v8-flags=--heap-growing-percent=50,--max-semi-space-size=4",
] as const;

/**
 * Every Deno flag the host runs with (`deno task corral`, the installed
 * command, the compiled binary, the MCP client entry corral writes): its
 * permissions, then its V8 flags.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HOST_FLAGS, HOST_PERMISSION_FLAGS } from "./host_flags.ts";
 * assert.deepEqual(HOST_FLAGS.slice(0, HOST_PERMISSION_FLAGS.length), [...HOST_PERMISSION_FLAGS]);
 * assert.ok(HOST_FLAGS.some((f) => f.startsWith("--v8-flags=")));
 * ```
 */
export const HOST_FLAGS: readonly string[] = [...HOST_PERMISSION_FLAGS, ...HOST_V8_FLAGS];
