/**
 * The host bundle: corral's command line (./cli.ts and every module it may
 * load) made by `deno bundle` into a few JavaScript files in `.corral/bundle`
 * of corral's install folder (trust base: no tool may change it), by
 * ./bundle_build.ts. A cold `corral call` then loads a handful of files
 * instead of about 150 modules (Deno reads, checks and compiles each), and
 * `corral mcp` a chunk of its own besides.
 *
 * It is used only while every source file it was made from has the stamp
 * it had then (core/base/file_stamp.ts: size, inode, mtime, ctime; corral's
 * `deno.json` and `deno.lock` among them, which pin its packages; and the
 * sandboxes' files, whose npm packages it lists) and Deno
 * is the same version. Otherwise corral runs from its modules, as without
 * a bundle, and a fresh bundle is made in the background (one process at a
 * time, detached, with write access to the bundle folder only). The first
 * bundle is made by hand (`deno task bundle`, or the benchmark before it
 * measures): a copy of corral with no `.corral/bundle` folder never starts
 * a build behind its caller's back. A compiled binary, a host that may not
 * write the folder or run Deno, and `CORRAL_BUNDLE=off` never use or make
 * one.
 *
 * @module
 */
import { denoDir } from "../base/deno_dir.ts";
import { fileStamp, RACY_MS } from "../base/file_stamp.ts";

/** The install folder, the bundle folder and the record of the current bundle. */
const _INSTALL = new URL("../../", import.meta.url);
const _DIR = new URL(".corral/bundle/", _INSTALL);

/** The layout of the record; a new one ignores bundles made before. */
export const BUNDLE_VERSION = 2;

/** What ./bundle_build.ts records of the bundle it made (`current.json`). */
export interface BundleRecord {
  v: number;
  deno: string;
  /** Its folder's name in `.corral/bundle/`. */
  dir: string;
  /** Every source file it holds, with its stamp then (absolute paths). */
  stamps: Array<[string, string]>;
  /** The npm packages (name, version) corral's sandboxes load: they must be in the Deno cache. */
  npm: Array<[string, string]>;
}

/** The commands run from the bundle: the cold call's path, and `corral mcp`'s start. */
const _COMMANDS = ["call", "mcp"];

/** A bundle build older than this is taken as dead: its lock is removed. */
const _STALE_LOCK_MS = 10 * 60_000;

/**
 * The command line from the host bundle, when `argv` is a command it serves
 * (`call`, `mcp`) and the bundle is fresh; else undefined (a stale or missing one
 * is then made again in the background). `CORRAL_BUNDLE=off` never uses it;
 * `CORRAL_BUNDLE=require` refuses a call it cannot serve (exit 3, for the
 * benchmark and tests, which must know what they measure).
 */
export async function hostBundle(argv: string[]): Promise<BundledCli | undefined> {
  const mode = _mode();
  if (mode === "off" || !_COMMANDS.some((c) => argv.includes(c)) || !_allowed()) return undefined;
  const record = readBundleRecord();
  if (record && bundleFresh(record)) {
    // Run from the modules once, which fills this Deno cache, when it lacks what sandboxes load.
    const lacking = uncachedPackages(record);
    if (lacking.length) return _missing(mode, `this Deno cache lacks ${lacking.join(", ")}`);
    let bundled: BundledCli & { commandOf(argv: string[]): string | undefined };
    try {
      bundled = await import(new URL(`${record.dir}/entry.js`, _DIR).href);
    } catch (err) {
      return _missing(mode, `it cannot be loaded (${(err as Error).message})`);
    }
    // Another command that merely holds the word runs from the modules.
    return _COMMANDS.includes(bundled.commandOf(argv) ?? "") ? bundled : undefined;
  }
  _rebuild();
  return _missing(mode, record ? "a source file changed since it was made" : "none was made");
}

/** What main.ts runs: ./cli.ts's `main`. */
export interface BundledCli {
  main(argv: string[]): Promise<number>;
}

function _missing(mode: string | undefined, why: string): BundledCli | undefined {
  if (mode !== "require") return undefined;
  return {
    main: () => {
      console.error(`corral: no fresh host bundle: ${why} (CORRAL_BUNDLE=require)`);
      return Promise.resolve(3);
    },
  };
}

function _mode(): string | undefined {
  try {
    return Deno.env.get("CORRAL_BUNDLE");
  } catch {
    return undefined;
  }
}

/** The record of the current bundle, or undefined. */
export function readBundleRecord(): BundleRecord | undefined {
  try {
    const r = JSON.parse(Deno.readTextFileSync(new URL("current.json", _DIR)));
    return r?.v === BUNDLE_VERSION && typeof r.dir === "string" && Array.isArray(r.stamps) &&
        Array.isArray(r.npm)
      ? r as BundleRecord
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The packages of `record.npm` missing from this process's Deno cache
 * (`DENO_DIR`, else `$XDG_CACHE_HOME/deno`, else `~/.cache/deno`), as
 * `name@version`.
 */
export function uncachedPackages(record: BundleRecord): string[] {
  const cache = denoDir();
  return record.npm.filter(([name, version]) => {
    try {
      return !Deno.statSync(`${cache}/npm/registry.npmjs.org/${name}/${version}`).isDirectory;
    } catch {
      return true;
    }
  }).map(([name, version]) => `${name}@${version}`);
}

/** Whether `record` was made by this Deno from the source files as they are now. */
export function bundleFresh(record: BundleRecord): boolean {
  if (record.deno !== Deno.version.deno || !/^[\w-]+$/.test(record.dir)) return false;
  return record.stamps.length > 0 && record.stamps.every(([f, s]) => fileStamp(f) === s);
}

function _allowed(): boolean {
  try {
    // A compiled binary runs from its own embedded files (core/base/self_run.ts compiledCorral).
    const exe = Deno.execPath();
    return /^deno(\.exe)?$/.test(exe.slice(exe.lastIndexOf("/") + 1));
  } catch {
    return false;
  }
}

/**
 * Start a detached build of a fresh bundle (`corral __bundle`: ./bundle_build.ts), unless one
 * runs or no bundle folder was ever made.
 */
function _rebuild(): void {
  try {
    const dir = decodeURIComponent(_DIR.pathname);
    const deno = Deno.execPath();
    const may = (d: Deno.PermissionDescriptor) => Deno.permissions.querySync(d).state === "granted";
    if (!may({ name: "write", path: dir }) || !may({ name: "run", command: deno })) return;
    if (!Deno.statSync(dir).isDirectory) return;
    const lock = `${dir}build.lock`;
    try {
      const age = Date.now() - (Deno.statSync(lock).mtime?.getTime() ?? 0);
      if (age < _STALE_LOCK_MS) return; // one build at a time
      Deno.removeSync(lock);
    } catch { /* no build running */ }
    // A build that failed for these very sources is not tried again at every call.
    if (_failedFor(dir)) return;
    Deno.writeTextFileSync(lock, String(Date.now()), { createNew: true });
    const child = new Deno.Command(deno, {
      args: [
        "run",
        "--no-prompt",
        "--allow-read",
        `--allow-write=${dir}`,
        `--allow-run=${deno}`,
        "--allow-env",
        `--config=${decodeURIComponent(new URL("deno.json", _INSTALL).pathname)}`,
        decodeURIComponent(new URL("main.ts", _INSTALL).pathname),
        "__bundle",
      ],
      cwd: decodeURIComponent(_INSTALL.pathname),
      stdin: "null",
      stdout: "null",
      stderr: "null",
      detached: true,
    }).spawn();
    child.unref();
  } catch { /* no bundle this time: corral runs from its modules */ }
}

/** A build failed within the last hour, with no source changed since (`failed.json`). */
function _failedFor(dir: string): boolean {
  try {
    const f = JSON.parse(Deno.readTextFileSync(`${dir}failed.json`)) as BundleRecord & {
      at: number;
    };
    return Date.now() - f.at < 3600_000 && bundleFresh(f) && Date.now() - f.at > RACY_MS;
  } catch {
    return false;
  }
}
