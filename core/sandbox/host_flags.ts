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

/** The host's permission flags, as in deno.json's `corral` task. */
export const HOST_PERMISSION_FLAGS = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
] as const;
