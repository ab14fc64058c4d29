/**
 * Path guards for tools. Deno checks where a symlink IS, not where it
 * points, so a tool must resolve every path it is given (`Deno.realPath`)
 * and refuse one whose real location is outside its granted roots. Tools
 * then operate on the returned real path, the one that was checked.
 *
 * Path metadata is read with the synchronous calls: each takes microseconds,
 * where an async one costs a trip through Deno's thread pool.
 *
 * Limit: a path is checked, then used; a process that swaps a directory for
 * a symlink between the two (TOCTOU) is not stopped here. Tools in one
 * sandbox do not run other code between check and use.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, resolve, sep } from "./_posix_path.ts";
import { PermissionDeniedError } from "../tool/mod.ts";

/**
 * The rule behind a refusal and what the operator would change, for error
 * messages: never a way around it. The host names the policy entry
 * (`this tool's entry` becomes `permissions.json plugins.x`).
 */
export const GRANT_RULE = {
  files: `refused by the "read"/"write" paths of this tool's entry in permissions.json; ` +
    `the operator would add the folder there`,
  net: `refused by the "net" list of this tool's entry in permissions.json; ` +
    `the operator would add the host there`,
} as const;
/** Options of {@link resolveInside}. */
export interface ResolveOptions {
  /**
   * The path may not exist yet (a file to create): its nearest existing
   * parent is resolved and the rest appended. A dangling symlink on the way
   * is refused, since writing through it would land wherever it points.
   */
  create?: boolean;
  /**
   * Do not follow a symlink in the LAST component: resolve the parent and
   * append the name, so that deleting or renaming a link acts on the link
   * itself. The path must still exist unless `create` is set.
   */
  noFollow?: boolean;
  /** Word naming the thing in "not found" messages (default `"file"`). */
  what?: string;
}

/**
 * Resolve a user-given `path` (relative to `workspace`) to its real absolute
 * path and make sure it lies inside one of `roots`. Throws a
 * {@link PermissionDeniedError} naming the path as the user gave it when it
 * does not, and `Deno.errors.NotFound` (`file "x.txt" not found`) when it
 * does not exist and `create` is not set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveInside } from "./paths.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "hi");
 * const real = await resolveInside("a.txt", [ws], ws);
 * assert.ok(real.endsWith("/a.txt"));
 * try {
 *   await resolveInside("../x", [ws], ws, { create: true });
 * } catch (err) {
 *   assert.ok((err as Error).name === "PermissionDeniedError");
 * }
 * ```
 */
export function resolveInside(
  path: string,
  roots: string[],
  workspace: string,
  options: ResolveOptions = {},
): Promise<string> {
  // A promise for callers (the check may go async again); the work is sync.
  try {
    return Promise.resolve(_resolveInside(path, roots, workspace, options));
  } catch (err) {
    return Promise.reject(err);
  }
}

function _resolveInside(
  path: string,
  roots: string[],
  workspace: string,
  options: ResolveOptions,
): string {
  const shown = JSON.stringify(path);
  if (typeof path !== "string" || path === "" || path.includes("\0")) {
    throw new TypeError(`invalid path ${shown}`);
  }
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  const realRoots = roots.map(_realRoot);
  const denied = () =>
    new PermissionDeniedError(
      `path ${shown} is outside the folders this tool may use (${GRANT_RULE.files})`,
    );

  let real: string;
  try {
    if (options.noFollow && dirname(abs) !== abs) {
      const parent = _resolvePartial(dirname(abs), options.create === true);
      real = join(parent, basename(abs));
      if (!options.create) Deno.lstatSync(real);
    } else {
      real = _resolvePartial(abs, options.create === true);
    }
  } catch (err) {
    if (err instanceof _DanglingLink) {
      throw new PermissionDeniedError(`path ${shown} goes through a broken symbolic link`);
    }
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      // Say "not found" only for paths the tool may see; elsewhere, deny.
      let guess: string;
      try {
        guess = _resolvePartial(abs, true);
      } catch {
        throw denied();
      }
      if (!_insideAny(guess, realRoots)) throw denied();
      throw new Deno.errors.NotFound(`${options.what ?? "file"} ${shown} not found`);
    }
    if (err instanceof Error && (err.name === "NotCapable" || err.name === "PermissionDenied")) {
      throw denied();
    }
    throw fsError(err, path, options.what);
  }
  if (!_insideAny(real, realRoots)) throw denied();
  return real;
}

/**
 * Whether `child` (an absolute, normalised path) is `root` or inside it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isInside } from "./paths.ts";
 * assert.ok(isInside("/a/b", "/a") && !isInside("/ab", "/a"));
 * ```
 */
export function isInside(child: string, root: string): boolean {
  if (child === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return child.startsWith(prefix);
}

/**
 * A path to show to the user: relative to the workspace when inside it,
 * else the path as given (never a host path outside the workspace).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { displayPath } from "./paths.ts";
 * assert.ok(displayPath("/ws/a/b.txt", "/ws", "x") === "a/b.txt");
 * assert.ok(displayPath("/etc/passwd", "/ws", "secret") === "secret");
 * ```
 */
export function displayPath(real: string, workspace: string, given: string): string {
  const ws = resolve(workspace);
  if (real === ws) return ".";
  return isInside(real, ws) ? real.slice(ws.length + (ws.endsWith(sep) ? 0 : 1)) : given;
}

/**
 * Turn an error of a file operation into one whose message names the path
 * as the user gave it (Deno's own messages carry the absolute host path).
 * Permission errors become a {@link PermissionDeniedError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fsError } from "./paths.ts";
 * const err = fsError(new Deno.errors.NotFound("open '/ws/a.txt'"), "a.txt");
 * assert.ok(err.message === 'file "a.txt" not found');
 * ```
 */
export function fsError(err: unknown, given: string, what = "file"): Error {
  const shown = JSON.stringify(given);
  if (!(err instanceof Error)) return new Error(`cannot use ${what} ${shown}: ${String(err)}`);
  if (err instanceof PermissionDeniedError) return err;
  switch (err.name) {
    case "NotFound":
      return new Deno.errors.NotFound(`${what} ${shown} not found`);
    case "AlreadyExists":
      return new Deno.errors.AlreadyExists(`${what} ${shown} already exists`);
    case "IsADirectory":
      return new Deno.errors.IsADirectory(`${shown} is a directory`);
    case "NotADirectory":
      return new Deno.errors.NotADirectory(`${shown}: a parent of it is not a directory`);
    case "NotCapable":
    case "PermissionDenied":
      return new PermissionDeniedError(`no access to ${shown}`);
    case "InvalidData":
      return new Error(`${what} ${shown} is not valid text`);
    default: {
      // Keep the OS reason, drop the quoted host path Deno appends.
      const reason = err.message.replace(/[:,]?\s*\w*\s*'[^']*'.*$/s, "").trim() || err.name;
      return new Error(`cannot use ${what} ${shown}: ${reason}`);
    }
  }
}

function _insideAny(real: string, roots: string[]): boolean {
  return roots.some((root) => isInside(real, root));
}

function _realRoot(root: string): string {
  const abs = resolve(root);
  try {
    return Deno.realPathSync(abs);
  } catch {
    return abs; // missing or unreadable root: compare lexically
  }
}

class _DanglingLink extends Error {}

/**
 * Real path of `abs`. With `create`, a missing tail is allowed: the nearest
 * existing ancestor is resolved and the missing names appended.
 */
function _resolvePartial(abs: string, create: boolean): string {
  if (!create) return Deno.realPathSync(abs);
  let head = abs;
  const tail: string[] = [];
  while (true) {
    try {
      return join(Deno.realPathSync(head), ...tail);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    let isLink = false;
    try {
      isLink = Deno.lstatSync(head).isSymlink;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    if (isLink) throw new _DanglingLink(head);
    const parent = dirname(head);
    if (parent === head) return join(head, ...tail);
    tail.unshift(basename(head));
    head = parent;
  }
}
