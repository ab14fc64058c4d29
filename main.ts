/**
 * corral's entry: `deno run … main.ts COMMAND …` (`deno task corral`, the
 * installed command, a compiled binary). It runs the command line of
 * core/cli/cli.ts: from the host bundle when the command is one it serves
 * and the bundle is fresh (core/cli/host_bundle.ts: a few files instead of
 * about 150 modules), else from corral's modules themselves.
 *
 * Exit codes: 0 success, 1 the tool (or check) failed, 2 usage or
 * configuration error, 3 internal error.
 *
 * @module
 */
import { hostBundle } from "./core/cli/host_bundle.ts";

/** Run the CLI with `argv` (from corral's modules); returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  return await (await _cli()).main(argv);
}

/** core/cli/cli.ts, by a computed specifier: Deno builds the graph of what runs only. */
function _cli(): Promise<typeof import("./core/cli/cli.ts")> {
  return import(new URL("./core/cli/cli.ts", import.meta.url).href);
}

if (import.meta.main) {
  const cli = (await hostBundle(Deno.args)) ?? (await _cli());
  Deno.exit(await cli.main(Deno.args));
}
