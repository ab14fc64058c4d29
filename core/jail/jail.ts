/**
 * Finding a working bubblewrap (`bwrap`), the tool that builds the sandbox
 * namespace (core/jail/namespace.ts), and the policy's `jail` setting.
 * bwrap is found on PATH and probed once per process (optionally
 * remembered in corral's cache): the probe builds a namespace with the
 * features corral uses (`--unshare-all`, `--cap-drop ALL`, tmpfs remounted
 * read-only). No tool ever holds bwrap: a tool that could run it could
 * choose its own mounts.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join } from "node:path";
import { namespaceBase } from "./namespace.ts";

/**
 * The policy's `jail` setting: `required` (the default) runs every process
 * sandbox in the namespace and refuses tools that need it when bwrap does
 * not work; `auto` is the same (kept for old policy files); `off` is the
 * operator's explicit opt-out.
 */
export type JailMode = "required" | "auto" | "off";

/** What `list` shows: the tool's sandbox runs in the namespace, or not. */
export type JailStatus = "bwrap" | "none";

/** The bwrap flags of the probe: the features the namespace needs. */
const _PROBE_ARGS = ["--ro-bind", "/", "/", ...namespaceBase(false), "--remount-ro", "/tmp"];

let _found: Promise<string | undefined> | undefined;

/**
 * The absolute path of a `bwrap` that works on this machine (it can build a
 * namespace jail here), or `undefined`. Looked up once per process; needs
 * env (PATH) and run permission, so call it in the host.
 *
 * @example
 * ```ts ignore
 * import { findBwrap } from "./jail.ts";
 * console.log(await findBwrap() ?? "no working bwrap: tools that need the namespace do not load");
 * ```
 */
export function findBwrap(options: BwrapProbeOptions = {}): Promise<string | undefined> {
  return _found ??= _find(options);
}

/** Options of {@link findBwrap}. */
export interface BwrapProbeOptions {
  /**
   * Remember the probe's outcome in this file, keyed by the binary's path,
   * size and mtime, for `maxAgeMs`: each start then skips the probe (a
   * namespace set-up, ≈ 13 ms here). A call on a machine where bwrap
   * stopped working fails; it never runs without the namespace.
   */
  cacheFile?: string;
  /** How long a remembered outcome holds (default one hour). */
  maxAgeMs?: number;
}

interface _ProbeRecord {
  path: string;
  size: number;
  mtime: number;
  ok: boolean;
  at: number;
}

async function _find(options: BwrapProbeOptions): Promise<string | undefined> {
  let path: string | undefined;
  try {
    path = Deno.env.get("PATH");
  } catch { /* no env permission */ }
  // No PATH, or an empty one (a GUI app, a client config): the system's own folders. Deno
  // then sets PATH to its own `node_compat_bin` folder (npm's bin shims), which is no PATH.
  const dirs = (path ?? "").split(":").filter((d) => isAbsolute(d) && !_denoShims(d));
  for (const dir of dirs.length ? dirs : ["/usr/local/bin", "/usr/bin", "/bin"]) {
    const candidate = join(dir, "bwrap");
    try {
      const st = Deno.statSync(candidate);
      if (!st.isFile) continue;
      const key = { path: candidate, size: st.size, mtime: st.mtime?.getTime() ?? 0 };
      const known = _readProbe(options.cacheFile);
      const maxAge = options.maxAgeMs ?? 3_600_000;
      if (
        known && known.path === key.path && known.size === key.size &&
        known.mtime === key.mtime && Date.now() - known.at < maxAge
      ) {
        return known.ok ? candidate : undefined;
      }
      const probe = await new Deno.Command(candidate, {
        args: [..._PROBE_ARGS, "--", "true"],
        clearEnv: true,
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).output();
      _writeProbe(options.cacheFile, { ...key, ok: probe.success, at: Date.now() });
      return probe.success ? candidate : undefined;
    } catch {
      continue;
    }
  }
  return undefined;
}

/** Deno's folder of npm bin shims, which it puts on an empty PATH. */
function _denoShims(dir: string): boolean {
  return basename(dir) === "node_compat_bin";
}

function _readProbe(file: string | undefined): _ProbeRecord | undefined {
  if (!file) return undefined;
  try {
    const r = JSON.parse(Deno.readTextFileSync(file));
    return typeof r?.path === "string" && typeof r?.ok === "boolean" ? r : undefined;
  } catch {
    return undefined;
  }
}

function _writeProbe(file: string | undefined, record: _ProbeRecord): void {
  if (!file) return;
  try {
    Deno.mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${crypto.randomUUID()}.tmp`;
    Deno.writeTextFileSync(tmp, JSON.stringify(record));
    Deno.renameSync(tmp, file);
  } catch { /* no cache: probe again next time */ }
}
