/**
 * The command line of a fixture MCP server (tests/fixtures/, raw JSON-RPC
 * on stdio through tests/fixtures/_stdio_rpc.ts), as a hosted "command"
 * server's `command` in corral.json. corral binds only the absolute paths
 * of that command line into the server's namespace, so the shared stdio
 * loop is named there too (`--preload`, which loads the very module the
 * server imports).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fixtureServer, STDIO_RPC } from "./fixture_server.ts";
 * const command = fixtureServer("/srv/fixture.ts", { args: ["name"] });
 * assert.deepEqual(command.slice(1, 4), ["run", "-A", "--no-config"]);
 * assert.deepEqual(command.slice(-4), ["--preload", STDIO_RPC, "/srv/fixture.ts", "name"]);
 * ```
 *
 * A Python fixture server (tests/fixtures/_stdio_rpc.py) takes its loop's
 * path as its last argument:
 *
 * ```ts
 * import assert from "node:assert/strict";
 * import { PY_STDIO_RPC, pyFixtureServer } from "./fixture_server.ts";
 * const py = pyFixtureServer("/srv/fixture.py", { args: ["a"] });
 * assert.deepEqual(py, ["python3", "/srv/fixture.py", "a", PY_STDIO_RPC]);
 * ```
 *
 * @module
 */
import { FIXTURES } from "./paths.ts";

/** The stdio loop every fixture server imports. */
export const STDIO_RPC: string = `${FIXTURES}_stdio_rpc.ts`;

/** What {@link fixtureServer} puts around the server's file. */
export interface FixtureServerOptions {
  /** The server's own arguments, after its file. */
  args?: string[];
  /** Deno's permission flags (`-A` unless named). */
  flags?: string[];
}

/** `deno run FLAGS --no-config` of fixture server `file` (an absolute path). */
export function fixtureServer(file: string, options: FixtureServerOptions = {}): string[] {
  return [
    Deno.execPath(),
    "run",
    ...(options.flags ?? ["-A"]),
    "--no-config",
    ...["--preload", STDIO_RPC],
    file,
    ...(options.args ?? []),
  ];
}

/** The stdio loop every Python fixture server loads. */
export const PY_STDIO_RPC: string = `${FIXTURES}_stdio_rpc.py`;

/**
 * `python3 FILE ARGS LOOP` (or another interpreter, or a script, as `python`)
 * of Python fixture server `file`: the shared loop's path comes last, where
 * the server loads it from.
 */
export function pyFixtureServer(
  file: string,
  options: { args?: string[]; python?: string } = {},
): string[] {
  return [
    ...(options.python ? [options.python] : ["python3"]),
    file,
    ...(options.args ?? []),
    PY_STDIO_RPC,
  ];
}
