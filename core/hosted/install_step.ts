/**
 * One step of installing a hosted server (`deno cache`, `python3 -m venv`,
 * `pip download`, `pip install`): run it, and on failure throw an Error that
 * names the server, the package and what failed.
 *
 * @module
 */
import type { ServerEntry } from "../config/server_config.ts";

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
 * Run `command args` (the host's environment plus `env`); returns its
 * stdout. Throws an {@link installError} with the end of its stderr, saying
 * so when the package index could not be reached or has no such version.
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
    env: { ...env, PIP_NO_INPUT: "1" },
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join(" ");
    const unreachable =
      /No matching distribution|Could not find a version|NewConnectionError|ProxyError|network/i
        .test(err);
    throw installError(
      entry,
      `${
        unreachable ? "the package index could not be reached or has no such version: " : ""
      }${command} ${args[0]} failed: ${err.slice(0, 600)}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}
