/**
 * Why a tool name is not in the catalog when a plugin file that may define
 * it did not load: it failed to import (a syntax error, a throw at top
 * level, `is_configured()` false…) or it was rejected before any sandbox saw
 * it (a symlink or an import leading outside its folder). A call, a schema
 * request or an MCP `tools/call` of that name then gives the file's reason,
 * not "unknown tool". Which files may define a name is read from their
 * text: nothing is imported.
 *
 * @module
 */
import { basename, extname } from "node:path";

/** A plugin file (or module) that did not load, and why, one line. */
export interface NotLoaded {
  /** The file: a module's real path, or a rejected file's path in its folder. */
  source: string;
  /** The reason as `corral list` shows it (`.../broken.ts: import failed: …`). */
  message: string;
}

/** The largest file read to look for a name (plugin files are small). */
const _MAX_BYTES = 1 << 20;

/**
 * The files of `files` that may define a tool `name`: the file's stem is the
 * name (`FindTodos` in `find_todos.ts`), or its text names it as a word.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { filesNaming } from "./not_loaded.ts";
 * const f = { source: "/nowhere/find_todos.ts", message: "import failed" };
 * assert.deepEqual(filesNaming("FindTodos", [f]), [f]);
 * assert.deepEqual(filesNaming("Other", [f]), []);
 * ```
 */
export function filesNaming(name: string, files: NotLoaded[]): NotLoaded[] {
  const flat = (s: string) => s.toLowerCase().replace(/[_.-]/g, "");
  const word = new RegExp(`(^|[^A-Za-z0-9_.$-])${_escape(name)}($|[^A-Za-z0-9_.$-])`);
  return files.filter((f) => {
    if (flat(basename(f.source, extname(f.source))) === flat(name)) return true;
    try {
      if (Deno.statSync(f.source).size > _MAX_BYTES) return false;
      return word.test(Deno.readTextFileSync(f.source));
    } catch {
      return false;
    }
  });
}

/**
 * The message for a name the catalog does not have: the reason of each file
 * that may define it (`Tool "X" did not load: …`), else `Unknown tool "X"`
 * with the closest names and the files that did not load, which may.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { notLoadedMessage } from "./not_loaded.ts";
 * const f = { source: "/nowhere/broken.ts", message: ".../broken.ts: import failed: SyntaxError" };
 * assert.equal(notLoadedMessage("Broken", [f], []), 'Tool "Broken" did not load: .../broken.ts: import failed: SyntaxError');
 * assert.match(notLoadedMessage("Nope", [f], ["Note"]), /^Unknown tool "Nope" \(did you mean: Note\?\); 1 plugin file did not load/);
 * ```
 */
export function notLoadedMessage(name: string, files: NotLoaded[], near: string[]): string {
  const naming = filesNaming(name, files);
  if (naming.length) {
    return `Tool "${name}" did not load: ${naming.map((f) => f.message).join("; ")}`;
  }
  const unknown = `Unknown tool "${name}"${
    near.length ? ` (did you mean: ${near.join(", ")}?)` : ""
  }`;
  if (!files.length) return unknown;
  const shown = files.slice(0, 3).map((f) => f.message).join("; ");
  const more = files.length > 3 ? `; and ${files.length - 3} more (corral list says why)` : "";
  return `${unknown}; ${files.length} plugin file${files.length === 1 ? "" : "s"} did not ` +
    `load, and may define it: ${shown}${more}`;
}

function _escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
