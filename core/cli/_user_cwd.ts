/**
 * Where the user stood when they ran corral, and corral's own folder as a
 * real path. Every path the user types resolves against {@link userCwd}.
 *
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import { envVar } from "../config/env_var.ts";
import { INSTALL_DIR } from "../config/install_dir.ts";

/** corral's install folder with every symlink resolved (started through a link, too). */
export const OWN_DIR: string = _real(INSTALL_DIR);

/**
 * The folder the user ran corral from: under `deno task` Deno's own cwd is
 * the folder of corral's deno.json, and `INIT_CWD` holds where the user
 * stood; otherwise the current directory (an inherited `INIT_CWD` is not
 * ours then).
 *
 * An `INIT_CWD` that names corral's own folder is kept: Deno keeps an
 * `INIT_CWD` that is already set (a `deno task` inside another one run from
 * corral's folder), but under `deno task` nothing else says where the user
 * stood (`Deno.cwd()` and `PWD` are corral's folder too, checked with Deno
 * 2.9.6), so distrusting it would resolve against the very same folder, and
 * would only break a user who does stand there. What it can cost is bounded:
 * corral's own folder is never a workspace (a scratch one stands in).
 */
export function userCwd(): string {
  const cwd = Deno.cwd();
  const init = envVar("INIT_CWD");
  return init && (cwd === INSTALL_DIR || cwd === OWN_DIR) ? init : cwd;
}

/**
 * `path` made absolute against the folder the user ran corral from; `~`
 * stays for the callers that expand it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fromUser } from "./_user_cwd.ts";
 * assert.equal(fromUser("/etc/x"), "/etc/x");
 * assert.equal(fromUser("~/x"), "~/x");
 * assert.ok(fromUser("a.json").endsWith("/a.json"));
 * ```
 */
export function fromUser(path: string): string {
  if (isAbsolute(path) || path === "~" || path.startsWith("~/")) return path;
  return resolve(userCwd(), path);
}

function _real(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/** The path options every command may take (`--permissions` is letters for `new`). */
const _PATH_OPTIONS = ["workspace", "config", "permissions", "audit", "dir"] as const;

/**
 * Make every path the user typed absolute against the folder they ran
 * corral from (under `deno task`, not corral's own folder): the path
 * options, and the paths `check`, `audit`, `trust`, `plugins install` and
 * `plugins init` take.
 * `values` and `rest` are changed in place.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveUserPaths } from "./_user_cwd.ts";
 * const values: Record<string, unknown> = { permissions: "rw", audit: "log.jsonl" };
 * const rest = ["install", "npm:x@1"];
 * resolveUserPaths("new", values, rest);
 * assert.equal(values.permissions, "rw");
 * assert.ok((values.audit as string).startsWith("/"));
 * resolveUserPaths("plugins", values, rest);
 * assert.deepEqual(rest, ["install", "npm:x@1"]);
 * ```
 */
export function resolveUserPaths(
  command: string,
  values: Record<string, unknown>,
  rest: string[],
): void {
  for (const key of _PATH_OPTIONS) {
    if (key === "permissions" && command === "new") continue;
    const v = values[key];
    if (typeof v === "string" && v !== "") values[key] = fromUser(v);
  }
  const paths = command === "check" || command === "audit" || command === "trust"
    ? rest.map((_, i) => i)
    : command === "plugins" && rest[1] !== undefined &&
        (rest[0] === "init" || (rest[0] === "install" && !/^[a-z][a-z0-9+.-]*:/i.test(rest[1])))
    ? [1]
    : [];
  for (const i of paths) if (rest[i]) rest[i] = fromUser(rest[i]);
}
