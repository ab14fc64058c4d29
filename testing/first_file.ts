/**
 * The first of some paths that is a file: a system program a test or the
 * bench runs, wherever the machine keeps it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { firstFile } from "./first_file.ts";
 * assert.equal(firstFile(["/nonexistent/sh", "/bin/sh"]), "/bin/sh");
 * assert.equal(firstFile(["/nonexistent/sh"]), undefined);
 * ```
 *
 * @module
 */

/** The first of `paths` that is a file, else undefined. */
export function firstFile(paths: string[]): string | undefined {
  return paths.find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
}
