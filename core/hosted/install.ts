/**
 * Installing hosted servers ahead of time, at the exact version, with the
 * integrity recorded: nothing is downloaded when a server starts.
 *
 * - npm: `deno cache` of `npm:<name>@<version>` into a private `DENO_DIR`
 *   with a lock file of its own (npm integrity of every package); the
 *   server later runs `--cached-only --frozen` against that lock.
 * - PyPI: a private venv in corral's cache; the named distribution's file
 *   is checked against `sha256` before it and its dependencies are
 *   installed; every distribution and a manifest of the venv are recorded
 *   and checked before each start (core/hosted/_pypi_install.ts).
 * - command: nothing to install.
 *
 * @module
 */
import { denoProgram } from "../base/mod.ts";
import { join, resolve } from "node:path";
import type { ServerEntry } from "../config/mod.ts";
import type { InstallRecord } from "./_install_record.ts";
import { installStep, packageSpec } from "./_install_step.ts";
import { serversDir } from "./servers_dir.ts";
import { installPypi } from "./_pypi_install.ts";
import { checkVenv } from "./_venv_integrity.ts";

export type { InstallRecord, PypiDistribution } from "./_install_record.ts";
export { serversDir } from "./servers_dir.ts";

/** The folder of one package at one version (absolute: a relative `root` is resolved). */
export function installDir(entry: ServerEntry, root = serversDir()): string {
  const name = entry.package.replace(/[^A-Za-z0-9._-]+/g, "+");
  return resolve(root, `${entry.kind}-${name}@${entry.version}`);
}

/** The install record of `entry`, or why there is none (not installed). */
export function installed(entry: ServerEntry, root = serversDir()): InstallRecord | string {
  if (entry.kind === "command") return "nothing to install";
  const spec = packageSpec(entry);
  try {
    const r = JSON.parse(Deno.readTextFileSync(join(installDir(entry, root), "install.json")));
    // A changed sha256 pin is another install.
    const pin = !entry.sha256 || r.sha256 === entry.sha256;
    if (r.package === entry.package && r.version === entry.version && pin) {
      return r as InstallRecord;
    }
  } catch { /* not installed */ }
  return `${spec} is not installed: run \`corral servers install ${entry.name}\``;
}

/**
 * Install `entry` (npm or PyPI) unless it is already (a PyPI venv that changed
 * since its install, or whose `sha256` pin changed, is installed again);
 * returns the record.
 * Throws an Error naming the server and what failed (no registry, no
 * such version, a hash mismatch).
 */
export async function installServer(
  entry: ServerEntry,
  root = serversDir(),
): Promise<InstallRecord | undefined> {
  if (entry.kind === "command") return undefined;
  const have = installed(entry, root);
  const dir = installDir(entry, root);
  if (typeof have !== "string" && (have.kind !== "pypi" || await _venvIntact(have))) return have;
  // A venv is always made afresh: never over one that changed since its install or another pin.
  if (entry.kind === "pypi") await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const record = entry.kind === "npm" ? await _npm(entry, dir) : await installPypi(entry, dir);
  await Deno.writeTextFile(join(dir, "install.json"), JSON.stringify(record, null, 2) + "\n");
  return record;
}

async function _venvIntact(record: InstallRecord): Promise<boolean> {
  try {
    await checkVenv(record.dir, record.tree, "");
    return true;
  } catch {
    return false;
  }
}

async function _npm(entry: ServerEntry, dir: string): Promise<InstallRecord> {
  const denoDir = join(dir, "deno");
  const lock = join(dir, "deno.lock");
  const spec = packageSpec(entry);
  // A compiled corral installs with the Deno on PATH (it cannot be `deno cache` itself).
  const deno = denoProgram();
  if (typeof deno !== "string") throw new Error(`cannot install ${entry.name}: ${deno.missing}`);
  await installStep(entry, deno, ["cache", "--no-config", `--lock=${lock}`, spec], {
    DENO_DIR: denoDir,
  });
  const lockText = JSON.parse(await Deno.readTextFile(lock));
  const key = Object.keys(lockText.npm ?? {}).find((k) =>
    k === `${entry.package}@${entry.version}` ||
    k.startsWith(`${entry.package}@${entry.version}_`)
  );
  const integrity = key ? lockText.npm[key].integrity : undefined;
  if (!integrity) throw new Error(`Cannot install server "${entry.name}": ${lock} has no ${spec}`);
  return {
    kind: "npm",
    package: entry.package,
    version: entry.version,
    integrity,
    dir: denoDir,
    lock,
    time: new Date().toISOString(),
  };
}
