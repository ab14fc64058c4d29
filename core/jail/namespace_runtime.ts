/**
 * What the deno runtime and a tool's subprocesses need inside a sandbox
 * namespace, bound read-only: the running binary and the folders of its
 * shared libraries, Deno's cache, and for a tool that holds `x` a system
 * runtime (`/usr`, `/bin`, `/lib*` and a minimal `/etc`: no shadow files,
 * no keys, no accounts of the host's: `passwd`, `group`, `hosts` and
 * `resolv.conf` are corral's own, ./namespace_etc.ts). Used by ./namespace.ts.
 *
 * @module
 */
import { join } from "node:path";
import { denoDir, isWithin } from "../base/mod.ts";
import { libraryDirs } from "./_library_dirs.ts";
import { OWN_ETC } from "./namespace_etc.ts";

/** What the deno runtime needs inside a namespace. */
export interface RuntimeFiles {
  /** The real path of the running binary (deno, or a compiled corral). */
  exec: string;
  /** Directories holding its shared libraries (from `ldd`). */
  libDirs: string[];
  /** Deno's cache directory (`DENO_DIR`). */
  denoDir: string;
  /**
   * `denoDir` is the namespace's own, on its private `/tmp` (a discovery
   * sandbox that holds nothing, core/sandbox/discovery_deno_dir.ts): never
   * bound from the host, whatever exists at that path there.
   */
  scratchDenoDir?: boolean;
  /** Environment the runtime needs with this cache (`DENO_EMIT_CACHE_MODE`). */
  env?: Record<string, string>;
  /** `[from, to]` of corral's code store bound read-only last (core/sandbox/emit_cache.ts). */
  own?: Array<[from: string, to: string]>;
}

/**
 * The host's `/etc` entries a system runtime gets, read-only: how names and
 * libraries are looked up, the time zone, certificates, shell and Python
 * defaults, the OS release. No shadow files, no keys, no host secrets, no
 * accounts: `passwd`, `group`, `hosts` and `resolv.conf` are corral's own
 * (./namespace_etc.ts).
 */
export const SYSTEM_ETC: readonly string[] = [
  "/etc/host.conf",
  "/etc/nsswitch.conf",
  "/etc/gai.conf",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
  "/etc/timezone",
  "/etc/alternatives",
  "/etc/ssl/certs",
  "/etc/ca-certificates",
  "/etc/mime.types",
  "/etc/bash.bashrc",
  "/etc/profile",
  "/etc/inputrc",
  "/etc/os-release",
  "/etc/debian_version",
  "/etc/python3",
  "/etc/locale.alias",
];

/** The host's `/etc` entries a sandbox holding the network gets (name lookup, certificates). */
export const NET_ETC: readonly string[] = [
  "/etc/host.conf",
  "/etc/nsswitch.conf",
  "/etc/gai.conf",
  "/etc/ssl/certs",
  "/etc/ca-certificates",
];

/** The folders of a system runtime (those that exist are bound read-only). */
export const SYSTEM_DIRS: readonly string[] = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
];

let _runtime: Promise<RuntimeFiles> | undefined;

/**
 * The runtime files of this process (memoized): its binary, the folders of
 * its shared libraries, and Deno's cache (run in the host). The first
 * caller may name a cache file for the libraries (./_library_dirs.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeFiles } from "./namespace_runtime.ts";
 * const rt = await runtimeFiles();
 * assert.ok(rt.exec.startsWith("/") && rt.denoDir.startsWith("/"));
 * ```
 */
export function runtimeFiles(cacheFile?: string): Promise<RuntimeFiles> {
  return _runtime ??= _runtimeFiles(cacheFile);
}

async function _runtimeFiles(cacheFile?: string): Promise<RuntimeFiles> {
  const exec = Deno.realPathSync(Deno.execPath());
  const libDirs = new Set(await libraryDirs(exec, cacheFile));
  if (libDirs.size === 0) {
    for (const d of ["/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/lib"]) {
      if (_stat(d)) libDirs.add(d);
    }
  }
  return { exec, libDirs: [...libDirs], denoDir: denoDir() };
}

/**
 * The bwrap arguments that bind the runtime read-only: with `system` the
 * system runtime and its `/etc`, with `netFiles` (and no system runtime)
 * the name-resolution files and certificates, each with corral's own
 * `passwd`, `group`, `hosts` and `resolv.conf` from the folder `etc`
 * (./namespace_etc.ts; without it, none at all); then the binary's
 * libraries, the binary and Deno's cache.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeMounts } from "./namespace_runtime.ts";
 * const rt = { exec: "/usr/bin/deno", libDirs: ["/lib64"], denoDir: "/c/deno" };
 * const args = runtimeMounts(rt, { system: false, netFiles: false }).join(" ");
 * assert.ok(args.includes("--ro-bind /usr/bin/deno /usr/bin/deno") && !args.includes("/etc"));
 * ```
 */
export function runtimeMounts(
  rt: RuntimeFiles,
  o: { system: boolean; netFiles: boolean; etc?: string },
): string[] {
  const args: string[] = [];
  if (o.system) {
    for (const d of SYSTEM_DIRS) _systemDir(args, d);
    for (const e of SYSTEM_ETC) args.push("--ro-bind-try", e, e);
  } else if (o.netFiles) {
    for (const e of NET_ETC) args.push("--ro-bind-try", e, e);
  }
  if ((o.system || o.netFiles) && o.etc) {
    for (const name of OWN_ETC) args.push("--ro-bind", join(o.etc, name), `/etc/${name}`);
  }
  for (const d of rt.libDirs) args.push("--ro-bind-try", d, d);
  args.push("--ro-bind", rt.exec, rt.exec);
  if (!rt.scratchDenoDir) args.push("--ro-bind-try", rt.denoDir, rt.denoDir);
  return args;
}

/**
 * The runtime's files that sit on the namespace's own /tmp, bound again
 * after a mount of `p` (a path just bound from the grant) that covers /tmp
 * and the own /tmp made again over it (./own_mounts.ts `ownAgain`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeAgain } from "./namespace_runtime.ts";
 * const rt = { exec: "/tmp/x/deno", libDirs: ["/lib64"], denoDir: "/c/deno" };
 * assert.deepEqual(runtimeAgain("/", rt), ["--ro-bind", "/tmp/x/deno", "/tmp/x/deno"]);
 * assert.deepEqual(runtimeAgain("/ws", rt), []);
 * ```
 */
export function runtimeAgain(p: string, rt: RuntimeFiles): string[] {
  if (!isWithin("/tmp", p)) return [];
  const again: string[] = [];
  for (const d of rt.libDirs) if (isWithin(d, "/tmp")) again.push("--ro-bind-try", d, d);
  if (isWithin(rt.exec, "/tmp")) again.push("--ro-bind", rt.exec, rt.exec);
  if (isWithin(rt.denoDir, "/tmp") && !rt.scratchDenoDir) {
    again.push("--ro-bind-try", rt.denoDir, rt.denoDir);
  }
  return again;
}

function _systemDir(args: string[], dir: string): void {
  let st: Deno.FileInfo;
  try {
    st = Deno.lstatSync(dir);
  } catch {
    return;
  }
  if (st.isSymlink) args.push("--symlink", Deno.readLinkSync(dir), dir);
  else if (st.isDirectory) args.push("--ro-bind", dir, dir);
}

function _stat(p: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(p);
  } catch {
    return undefined;
  }
}
