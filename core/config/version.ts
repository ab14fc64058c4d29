/**
 * corral's version: the `version` of its `deno.json`, one source for
 * `corral --version` and the MCP server's `serverInfo.version`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { corralVersion } from "./version.ts";
 * assert.match(corralVersion(), /^\d+\.\d+\.\d+/);
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { INSTALL_DIR } from "./install_dir.ts";

let _version: string | undefined;

/** The version in corral's `deno.json`, or `"unknown"` (a compiled binary may not carry it). */
export function corralVersion(): string {
  return _version ??= _read();
}

function _read(): string {
  try {
    const json = JSON.parse(Deno.readTextFileSync(join(INSTALL_DIR, "deno.json")));
    return typeof json.version === "string" ? json.version : "unknown";
  } catch {
    return "unknown";
  }
}
