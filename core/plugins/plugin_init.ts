/**
 * `corral plugins init [DIR]`: a `deno.json` in a plugin folder whose import
 * map points at the installed corral, so that `deno run -A FILE --help` (a
 * tool's harness), `deno test FILE_test.ts` and an editor resolve
 * `@corral/corral`, `@corral/corral/testing` and `zod` there as a sandbox
 * does, without `--config`. corral itself never reads it: every sandbox
 * runs with corral's own `deno.json` and lock.
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { AUTHOR_API_FILES, INSTALL_DIR } from "../config/mod.ts";

/** The first line of the file this writes: a file that starts with it is corral's to rewrite. */
export const INIT_MARK = "// Written by corral plugins init";

/**
 * The text of the plugin folder's `deno.json`: corral's import map (its npm
 * packages at corral's exact versions, which corral's own files import
 * too) and its authoring API by absolute path. No lock file is written in
 * the folder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pluginDenoJson } from "./plugin_init.ts";
 * const text = await pluginDenoJson();
 * const json = JSON.parse(text.split("\n").slice(1).join("\n"));
 * assert.ok(json.imports["@corral/corral"].startsWith("file:///"));
 * assert.ok(json.imports["@corral/corral"].endsWith("/core/mod.ts"));
 * assert.equal(json.imports.zod.startsWith("npm:zod@3"), true);
 * ```
 */
export async function pluginDenoJson(): Promise<string> {
  const own = JSON.parse(await Deno.readTextFile(join(INSTALL_DIR, "deno.json")));
  const json = {
    imports: {
      ...own.imports,
      ...Object.fromEntries(
        Object.entries(AUTHOR_API_FILES).map(([k, f]) => [k, pathToFileURL(f).href]),
      ),
    },
    lock: false,
  };
  return `${INIT_MARK} for ${INSTALL_DIR}: run it again after moving corral.\n` +
    `${JSON.stringify(json, null, 2)}\n`;
}

/**
 * Write `dir/deno.json` (the folder is made when missing). A `deno.json`
 * that corral did not write is left alone: a `TypeError` says so.
 */
export async function initPluginDir(dir: string): Promise<{ file: string; replaced: boolean }> {
  const file = join(dir, "deno.json");
  let replaced = false;
  try {
    const old = await Deno.readTextFile(file);
    if (!old.startsWith(INIT_MARK)) {
      throw new TypeError(
        `${file} exists and corral did not write it: add "@corral/corral": ` +
          `"${AUTHOR_API_FILES["@corral/corral"]}" to its "imports" yourself, or run the ` +
          `harness as corral harness FILE`,
      );
    }
    replaced = true;
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(file, await pluginDenoJson());
  return { file, replaced };
}
