/**
 * The subprocess jail: bubblewrap (`bwrap`) around every process that an
 * `x` tool starts through {@link runSubprocess}. Inside it the root is
 * read-only, only the policy's write paths are writable, `/tmp` is a
 * private tmpfs, there is no network unless the tool holds `n`, and all
 * processes live in a new PID namespace that dies with the jail.
 *
 * How it fits Deno's sandbox: when a tool is jailed, `bwrap` is added to
 * its sandbox's Deno `--allow-run` list, and for plugins and packages it is
 * the ONLY entry: the commands the policy lists (`bash`, `python3`) run
 * INSIDE bwrap, and corral (in `runSubprocess`) refuses a command that is
 * not on that list. Deno's own run check therefore sees `bwrap`: tool code
 * that calls `Deno.Command(bwrap, …)` itself can choose other bwrap flags,
 * and a trusted built-in could still start its listed commands directly.
 * The jail contains what the started programs do (the model's Bash and
 * Python), not a hostile tool module holding `x`.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import type { JailSpec } from "../tool/tool.ts";

/** The policy's `jail` setting: `auto` jails when bwrap works here. */
export type JailMode = "required" | "auto" | "off";

/** What `list` shows for a tool that starts processes. */
export type JailStatus = "bwrap" | "none";

/** HOME inside the jail: a fresh directory on its private /tmp. */
export const JAIL_HOME = "/tmp/home";

let _found: Promise<string | undefined> | undefined;

/**
 * The absolute path of a `bwrap` that works on this machine (it can build a
 * namespace jail here), or `undefined`. Looked up once per process; needs
 * env (PATH) and run permission, so call it in the host.
 *
 * @example
 * ```ts ignore
 * import { findBwrap } from "./jail.ts";
 * console.log(await findBwrap() ?? "no working bwrap: subprocesses run unjailed");
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
   * namespace set-up, ≈ 13 ms here). A jailed call on a machine where bwrap
   * stopped working fails; it never runs unjailed.
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
  for (const dir of (path ?? "/usr/local/bin:/usr/bin:/bin").split(":")) {
    if (!isAbsolute(dir)) continue;
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
        args: [...bwrapArgs({ bwrap: candidate, write: [], net: false }, "/"), "--", "true"],
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

/**
 * The bwrap flags of a jail for a process working in `cwd`: `--unshare-all`
 * (`--share-net` when `spec.net`), `--ro-bind / /`, `--dev /dev`,
 * `--proc /proc`, `--tmpfs /tmp` with a HOME directory on it, `cwd` bound
 * read-only when it is under /tmp (so it stays visible), `--bind W W` for
 * each write path, `--chdir cwd`, `--die-with-parent`, `--new-session`.
 * The command and its arguments follow after `--`.
 *
 * @example
 * ```ts
 * import { bwrapArgs } from "./jail.ts";
 * const args = bwrapArgs({ bwrap: "/usr/bin/bwrap", write: ["/ws"], net: false }, "/ws");
 * console.assert(args.includes("--unshare-all") && !args.includes("--share-net"));
 * console.assert(args.join(" ").includes("--bind /ws /ws"));
 * ```
 */
export function bwrapArgs(spec: JailSpec, cwd: string): string[] {
  const args = [
    "--unshare-all",
    ...(spec.net ? ["--share-net"] : []),
    "--die-with-parent",
    "--new-session",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--dir",
    JAIL_HOME,
  ];
  // A workspace under /tmp would vanish under the private /tmp: bind it back, read-only.
  if (cwd.startsWith("/tmp/")) args.push("--ro-bind", cwd, cwd);
  for (const w of spec.write) args.push("--bind-try", w, w);
  args.push("--chdir", cwd);
  return args;
}

/**
 * The jail of a tool that starts processes (`grant.run` not empty), or why
 * it may not load. `bwrap` is the working binary ({@link findBwrap}) or
 * undefined; `write` the paths to bind writable.
 *
 * @example
 * ```ts
 * import { decideJail } from "./jail.ts";
 * const d = decideJail({ run: ["bash"], net: [] }, "required", undefined, []);
 * console.assert(d.status === "none" && d.missing?.includes("bwrap"));
 * ```
 */
export function decideJail(
  grant: { run: string[]; net: string[] },
  mode: JailMode,
  bwrap: string | undefined,
  write: string[],
  where = "this toolset",
  exclusive = false,
): { status?: JailStatus; jail?: JailSpec; missing?: string } {
  if (grant.run.length === 0) return {};
  if (mode === "off") return { status: "none" };
  if (!bwrap) {
    if (mode === "required") {
      return {
        status: "none",
        missing: `needs the bwrap jail (permissions.json ${where}.jail is "required"), ` +
          `but no working bwrap was found (install the bubblewrap package)`,
      };
    }
    return { status: "none" };
  }
  return {
    status: "bwrap",
    jail: { bwrap, write: [...write], net: grant.net.length > 0, exclusive },
  };
}
