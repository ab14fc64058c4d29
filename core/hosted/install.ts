/**
 * Installing hosted servers ahead of time, at the exact version, with the
 * integrity recorded: nothing is downloaded when a server starts.
 *
 * - npm: `deno cache` of `npm:<name>@<version>` into a private `DENO_DIR`
 *   with a lock file of its own (npm integrity of every package); the
 *   server later runs `--cached-only --frozen` against that lock.
 * - PyPI: `python3 -m venv` in corral's cache, then `pip install
 *   <name>==<version>` (`--require-hashes` when the entry gives `sha256`);
 *   the installed files are hashed into the record.
 * - command: nothing to install.
 *
 * @module
 */
import { join } from "node:path";
import { envVar } from "../config/env_var.ts";
import type { ServerEntry } from "../config/server_config.ts";

/** What an install left, read again before every start. */
export interface InstallRecord {
  kind: "npm" | "pypi";
  package: string;
  version: string;
  /** npm: the package's integrity from the lock; pypi: sha256 of the dist-info RECORD. */
  integrity: string;
  /** npm: the private Deno cache; pypi: the venv. */
  dir: string;
  /** npm: the lock file. */
  lock?: string;
  /** pypi: the interpreter's base prefix (bound read-only in the namespace). */
  pythonHome?: string;
  time: string;
}

/**
 * Where hosted servers are installed: `CORRAL_SERVERS_DIR`, else
 * `$XDG_CACHE_HOME/corral/servers`, else `~/.cache/corral/servers`.
 */
export function serversDir(): string {
  const explicit = envVar("CORRAL_SERVERS_DIR");
  if (explicit) return explicit;
  const xdg = envVar("XDG_CACHE_HOME");
  return join(xdg || join(envVar("HOME") || "/root", ".cache"), "corral", "servers");
}

/** The folder of one package at one version. */
export function installDir(entry: ServerEntry, root = serversDir()): string {
  const name = entry.package.replace(/[^A-Za-z0-9._-]+/g, "+");
  return join(root, `${entry.kind}-${name}@${entry.version}`);
}

/** The install record of `entry`, or why there is none (not installed). */
export function installed(entry: ServerEntry, root = serversDir()): InstallRecord | string {
  if (entry.kind === "command") return "nothing to install";
  const spec = _spec(entry);
  try {
    const r = JSON.parse(Deno.readTextFileSync(join(installDir(entry, root), "install.json")));
    if (r.package === entry.package && r.version === entry.version) return r as InstallRecord;
  } catch { /* not installed */ }
  return `${spec} is not installed: run \`corral servers install ${entry.name}\``;
}

/**
 * Install `entry` (npm or PyPI) unless it is already; returns the record.
 * Throws an Error naming the server and what failed (no registry, no
 * such version, a hash mismatch).
 */
export async function installServer(
  entry: ServerEntry,
  root = serversDir(),
): Promise<InstallRecord | undefined> {
  if (entry.kind === "command") return undefined;
  const have = installed(entry, root);
  if (typeof have !== "string") return have;
  const dir = installDir(entry, root);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const record = entry.kind === "npm" ? await _npm(entry, dir) : await _pypi(entry, dir);
  await Deno.writeTextFile(join(dir, "install.json"), JSON.stringify(record, null, 2) + "\n");
  return record;
}

function _spec(entry: ServerEntry): string {
  return entry.kind === "npm"
    ? `npm:${entry.package}@${entry.version}`
    : `${entry.package}==${entry.version}`;
}

async function _npm(entry: ServerEntry, dir: string): Promise<InstallRecord> {
  const denoDir = join(dir, "deno");
  const lock = join(dir, "deno.lock");
  const spec = _spec(entry);
  await _run(entry, Deno.execPath(), ["cache", "--no-config", `--lock=${lock}`, spec], {
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

async function _pypi(entry: ServerEntry, dir: string): Promise<InstallRecord> {
  const venv = join(dir, "venv");
  await _run(entry, "python3", ["-m", "venv", venv], {});
  const pip = join(venv, "bin", "pip");
  const req = join(dir, "requirements.txt");
  const line = `${entry.package}==${entry.version}` +
    (entry.sha256 ? ` --hash=sha256:${entry.sha256}` : "");
  await Deno.writeTextFile(req, line + "\n");
  await _run(entry, pip, [
    "install",
    "--disable-pip-version-check",
    "--no-input",
    "--retries",
    "2",
    "--timeout",
    "20",
    ...(entry.sha256 ? ["--require-hashes"] : []),
    "-r",
    req,
  ], {});
  const py = join(venv, "bin", "python3");
  const home = (await _run(entry, py, ["-c", "import sys; print(sys.base_prefix)"], {})).trim();
  const record = await _run(entry, py, [
    "-c",
    "import sys,hashlib,importlib.metadata as m; d=m.distribution(sys.argv[1]); " +
    "print(hashlib.sha256((d.read_text('RECORD') or '').encode()).hexdigest())",
    entry.package,
  ], {});
  return {
    kind: "pypi",
    package: entry.package,
    version: entry.version,
    integrity: `sha256-record:${record.trim()}`,
    dir: venv,
    pythonHome: home,
    time: new Date().toISOString(),
  };
}

async function _run(
  entry: ServerEntry,
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    env: { ...env, PIP_NO_INPUT: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join(" ");
    const unreachable =
      /No matching distribution|Could not find a version|NewConnectionError|ProxyError|network/i
        .test(err);
    throw new Error(
      `Cannot install server "${entry.name}" (${_spec(entry)}): ${
        unreachable ? "the package index could not be reached or has no such version: " : ""
      }${command} ${args[0]} failed: ${err.slice(0, 600)}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}
