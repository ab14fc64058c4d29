/**
 * POSIX path names for the guards that run inside a sandbox (./paths.ts,
 * ./planted.ts), with the results of `node:path` for every input those
 * guards give it (./_posix_path_test.ts compares the two). Importing any
 * `node:` module starts Deno's Node layer in the importing isolate (about
 * 4 MiB and a fifth of a small sandbox's start); a sandbox of corral's
 * built-in tools needs none of it.
 *
 * @module
 */

/** The separator. */
export const sep = "/";

/**
 * Whether `path` is absolute.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isAbsolute } from "./_posix_path.ts";
 * assert.ok(isAbsolute("/a") && !isAbsolute("a/b"));
 * ```
 */
export function isAbsolute(path: string): boolean {
  return path.startsWith("/");
}

/** Segments of `path` with `.` and empty ones dropped and `..` applied (kept above a relative start). */
function _segments(path: string, relativeStart: boolean): string[] {
  const out: string[] = [];
  for (const s of path.split("/")) {
    if (s === "" || s === ".") continue;
    if (s === "..") {
      if (out.length && out[out.length - 1] !== "..") out.pop();
      else if (relativeStart) out.push("..");
      continue;
    }
    out.push(s);
  }
  return out;
}

/**
 * `path` with `.`, `..` and repeated separators resolved; a trailing
 * separator is kept; `"."` for an empty result.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalize } from "./_posix_path.ts";
 * assert.equal(normalize("/a//b/../c/"), "/a/c/");
 * assert.equal(normalize("../x/./y"), "../x/y");
 * ```
 */
export function normalize(path: string): string {
  if (path === "") return ".";
  const abs = isAbsolute(path);
  let out = _segments(path, !abs).join("/");
  if (out === "" && !abs) out = ".";
  if (out !== "" && path.endsWith("/")) out += "/";
  return abs ? `/${out}` : out;
}

/**
 * The parts joined by `/`, normalized; `"."` when all are empty.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "./_posix_path.ts";
 * assert.equal(join("/a", "b/../c", "d"), "/a/c/d");
 * assert.equal(join("", ""), ".");
 * ```
 */
export function join(...parts: string[]): string {
  const kept = parts.filter((p) => p !== "");
  return kept.length ? normalize(kept.join("/")) : ".";
}

/**
 * An absolute, normalized path: the parts resolved right to left until one
 * is absolute, else from the current folder (`Deno.cwd()`, asked only then).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolve } from "./_posix_path.ts";
 * assert.equal(resolve("/ws", "a/../b", "c/"), "/ws/b/c");
 * assert.equal(resolve("/ws", "/etc"), "/etc");
 * ```
 */
export function resolve(...parts: string[]): string {
  let path = "";
  for (let i = parts.length - 1; i >= 0 && !isAbsolute(path); i--) {
    if (parts[i] !== "") path = path ? `${parts[i]}/${path}` : parts[i];
  }
  if (!isAbsolute(path)) path = path ? `${Deno.cwd()}/${path}` : Deno.cwd();
  return `/${_segments(path, false).join("/")}`;
}

/**
 * The folder of `path`: what precedes its last name (trailing separators
 * ignored) and that name's separator; `"."` for a bare name, `"/"` at the
 * root.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dirname } from "./_posix_path.ts";
 * assert.equal(dirname("/a/b/"), "/a");
 * assert.equal(dirname("/a"), "/");
 * assert.equal(dirname("a"), ".");
 * ```
 */
export function dirname(path: string): string {
  if (path === "") return ".";
  let i = path.length - 1;
  while (i >= 1 && path[i] === "/") i--; // trailing separators
  while (i >= 1 && path[i] !== "/") i--; // the last name
  if (i < 1) return path[0] === "/" ? "/" : ".";
  // What precedes the name's own separator stays as written; a leading "//" is kept (POSIX).
  return i === 1 && path[0] === "/" ? "//" : path.slice(0, i);
}

/**
 * The last part of `path` (trailing separators ignored), or `""`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { basename } from "./_posix_path.ts";
 * assert.equal(basename("/a/b.ts/"), "b.ts");
 * assert.equal(basename("/"), "");
 * ```
 */
export function basename(path: string): string {
  let end = path.length;
  while (end > 0 && path[end - 1] === "/") end--;
  return path.slice(path.lastIndexOf("/", end - 1) + 1, end);
}

/**
 * The path from `from` to `to` (both resolved first): `""` when they are
 * the same.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relative } from "./_posix_path.ts";
 * assert.equal(relative("/ws/a", "/ws/b/c"), "../b/c");
 * assert.equal(relative("/ws", "/ws"), "");
 * ```
 */
export function relative(from: string, to: string): string {
  const a = _segments(resolve(from), false);
  const b = _segments(resolve(to), false);
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common++;
  return [...a.slice(common).map(() => ".."), ...b.slice(common)].join("/");
}
