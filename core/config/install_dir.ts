/**
 * Where corral itself lives: the folder of `main.ts`, `deno.json`, the
 * shipped `permissions.json`, `core/`, `toolsets/` and `plugins/`. Every
 * module that needs one of those paths starts from here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { existsSync } from "node:fs";
 * import { join } from "node:path";
 * import { CORE_DIR, INSTALL_DIR } from "./install_dir.ts";
 * assert.ok(existsSync(join(INSTALL_DIR, "deno.json")));
 * assert.equal(CORE_DIR, join(INSTALL_DIR, "core"));
 * ```
 *
 * @module
 */
import { join, resolve } from "node:path";

/** corral's install folder (absolute, no trailing slash). */
export const INSTALL_DIR: string = resolve(new URL("../..", import.meta.url).pathname);

/** corral's `core/` folder: what plugins may import besides their own directory. */
export const CORE_DIR: string = join(INSTALL_DIR, "core");
