/**
 * The process `corral harness FILE [ARGS]` starts (core/cli/harness_command.ts):
 * `deno run <corral's flags> --config <corral>/deno.json harness_main.ts
 * FILE [ARGS]`. It imports the tool file with corral's import map (so
 * `@corral/corral` and `zod` resolve from any folder) and runs its module's
 * harness (./harness.ts) with the plugin's config section, passed in
 * `CORRAL_HARNESS`. Module tools need no code of their own for it. This is
 * a developer's tool, like `deno run -A FILE`: the tool runs outside any
 * sandbox, with the workspace as its grant.
 *
 * @module
 */
import { resolve } from "node:path";
import { runHarness } from "./harness.ts";
import { HARNESS_ENV, setupFromEnv } from "./harness_setup.ts";

/** Import `file` and run its harness with `args`; returns the exit code. */
export async function harnessMain(file: string, args: string[]): Promise<number> {
  const setup = setupFromEnv() ?? {};
  // The tool's own subprocesses do not inherit the section.
  Deno.env.delete(HARNESS_ENV);
  let ns: Record<string, unknown>;
  try {
    ns = await import(`file://${resolve(file)}`);
  } catch (err) {
    // As corral list says it (core/sandbox/sandbox_runtime.ts).
    const text = err instanceof Error ? err.message : String(err);
    console.error(`Error: ${file} did not load: import failed: ${text}`);
    return 1;
  }
  return await runHarness(ns, args, { setup, setExitCode: false });
}

if (import.meta.main) {
  const [file, ...args] = Deno.args;
  Deno.exit(file ? await harnessMain(file, args) : 2);
}
