/**
 * What a hosted npm server may learn about the machine: the Deno
 * `--allow-sys` names the operator grants it in permissions.json
 * (`servers.<name>.sys`). Some servers' dependencies ask at start (pino
 * reads `hostname`, an OpenTelemetry package `cpus`) and stop without it.
 * Tool code never gets `sys`; `setPriority` (an action, not a question) is
 * not offered.
 *
 * @module
 */
import { z } from "zod";

/** The `--allow-sys` names a server entry may list. */
export const SERVER_SYS_NAMES = [
  "hostname",
  "osRelease",
  "osUptime",
  "loadavg",
  "networkInterfaces",
  "systemMemoryInfo",
  "uid",
  "gid",
  "cpus",
  "homedir",
  "getegid",
  "statfs",
  "getPriority",
  "userInfo",
  "username",
] as const;

/**
 * The zod schema of `servers.<name>.sys`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverSysSchema } from "./_server_sys.ts";
 * assert.deepEqual(serverSysSchema.parse(["hostname", "cpus"]), ["hostname", "cpus"]);
 * assert.throws(() => serverSysSchema.parse(["setPriority"]));
 * ```
 */
export const serverSysSchema = z.array(z.enum(SERVER_SYS_NAMES)).optional().describe(
  "npm servers: Deno --allow-sys names its code needs (e.g. hostname, cpus); none by default",
);
