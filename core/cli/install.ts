/**
 * `deno task install`: make `corral` a command on PATH with
 * `deno install --global`, with the exact flags corral runs with, its
 * `deno.json` and its `deno.lock`:
 *
 *     deno install --global --force --name corral --config <corral>/deno.json \
 *       --allow-read --allow-write --allow-run --allow-net --allow-env --allow-sys <corral>/main.ts
 *
 * `deno install` copies the config beside the command (`<root>/bin/.corral/`);
 * corral's `deno.lock` is copied there too, so that the command checks every
 * npm package against corral's lock. The root is `DENO_INSTALL_ROOT`, else
 * `~/.deno`. Remove it with `deno uninstall --global corral`.
 *
 * @module
 */
import { join } from "node:path";
import { envVar } from "../config/env_var.ts";
import { INSTALL_DIR } from "../config/install_dir.ts";
import { HOST_PERMISSION_FLAGS } from "../sandbox/host_flags.ts";

/**
 * The `deno install` arguments that install the `corral` command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installArgs } from "./install.ts";
 * const args = installArgs("/opt/corral");
 * assert.deepEqual(args.slice(0, 6), ["install", "--global", "--force", "--name", "corral", "--config"]);
 * assert.ok(args.includes("--allow-run") && args.at(-1) === "/opt/corral/main.ts");
 * ```
 */
export function installArgs(dir: string = INSTALL_DIR, name = "corral"): string[] {
  return [
    "install",
    "--global",
    "--force",
    "--name",
    name,
    "--config",
    join(dir, "deno.json"),
    ...HOST_PERMISSION_FLAGS,
    join(dir, "main.ts"),
  ];
}

/** Install the command; returns the exit code. */
export async function install(): Promise<number> {
  const done = await new Deno.Command(Deno.execPath(), { args: installArgs() }).output();
  if (done.code !== 0) return done.code;
  const root = envVar("DENO_INSTALL_ROOT") || join(envVar("HOME") || "/root", ".deno");
  const bin = join(root, "bin");
  await Deno.copyFile(join(INSTALL_DIR, "deno.lock"), join(bin, ".corral", "deno.lock"));
  console.log(`corral: installed ${join(bin, "corral")}, locked by corral's deno.lock`);
  if (!(envVar("PATH") ?? "").split(":").includes(bin)) {
    console.log(`corral: add it to PATH: export PATH="${bin}:$PATH"`);
  }
  console.log("corral: remove it with: deno uninstall --global corral");
  return 0;
}

if (import.meta.main) Deno.exit(await install());
