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

/** The host's permission flags, as in deno.json's `corral` task. */
export const HOST_PERMISSION_FLAGS = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
] as const;
