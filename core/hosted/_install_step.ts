/**
 * One step of installing a hosted server (`deno cache`, `python3 -m venv`,
 * `pip download`, `pip install`): run it, and on failure throw an Error that
 * names the server, the package and what failed.
 *
 * @module
 */
import { basename } from "node:path";
import type { ServerEntry } from "../config/mod.ts";
import { childErrorText, QUIET_CHILD_ENV } from "../base/mod.ts";

/** `npm:name@1.2.3` or `name==1.2.3`: how an entry's package is named in messages. */
export function packageSpec(entry: ServerEntry): string {
  return entry.kind === "npm"
    ? `npm:${entry.package}@${entry.version}`
    : `${entry.package}==${entry.version}`;
}

/** The Error of a failed install of `entry`: `Cannot install server "x" (spec): reason`. */
export function installError(entry: ServerEntry, reason: string): Error {
  return new Error(`Cannot install server "${entry.name}" (${packageSpec(entry)}): ${reason}`);
}

/**
 * Run `command args` (the host's environment plus `env`, with colour,
 * prompts and backtraces off); returns its stdout. Throws an
 * {@link installError} with the lines of its output that say why (never
 * stack frames nor escapes), saying so when the package index could not be
 * reached or has no such version.
 */
export async function installStep(
  entry: ServerEntry,
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd?: string,
): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    env: { ...QUIET_CHILD_ENV, ...env, PIP_NO_INPUT: "1" },
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const dec = new TextDecoder();
    const err = childErrorText(`${dec.decode(out.stderr)}\n${dec.decode(out.stdout)}`) ||
      `exit code ${out.code}`;
    const unreachable =
      /No matching distribution|Could not find a version|Could not find npm package|NewConnectionError|ProxyError|network/i
        .test(err);
    throw installError(
      entry,
      `${unreachable ? "the package index could not be reached or has no such version: " : ""}${
        basename(command)
      } ${args[0]} failed: ${err}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}
