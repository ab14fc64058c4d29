/**
 * The sandbox namespace: the bubblewrap (`bwrap`) mount namespace a process
 * sandbox runs in. Its mounts ARE the grant: read paths read-only, write
 * paths read-write, plus what the runtime needs (read-only), and nothing
 * else: no `/home`, `/root`, `/run`, no host `/tmp`, `/proc`, `/dev` or
 * `/sys` even under a grant of `/`. Subprocesses inherit the namespace.
 *
 * Every path bound from the grant, the code, the trust base inside write
 * paths and the working directory is opened at start, checked to be exactly
 * the path the policy named, and that open file is what bwrap binds
 * (`--bind-fd`, by ./limits.ts). Other sandboxes' grant paths inside a write
 * path are pinned (mount points of themselves) like the trust base.
 *
 * Inside write paths, the trust base (`protect`) is bound again read-only,
 * and secrets (`hide`) are masked by an empty file or directory, wherever
 * they fall inside a mounted path. All capabilities are dropped, so code
 * inside cannot remount anything; `bwrap` itself is masked so that no tool
 * can build a namespace of its own from inside.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { EGRESS_SOCKET_IN_NAMESPACE } from "./egress_env.ts";
import { VERIFY_ARG } from "./limits.ts";
import { libraryDirs } from "./library_dirs.ts";

/** What the deno runtime needs inside a namespace. */
export interface RuntimeFiles {
  /** The real path of the running binary (deno, or a compiled corral). */
  exec: string;
  /** Directories holding its shared libraries (from `ldd`). */
  libDirs: string[];
  /** Deno's cache directory (`DENO_DIR`). */
  denoDir: string;
  /** `[from, to]` of corral's code store bound read-only last (core/sandbox/emit_cache.ts). */
  own?: Array<[from: string, to: string]>;
}

/** One namespace, as {@link namespaceArgs} builds it. */
export interface NamespaceSpec {
  /** The working bwrap binary. */
  bwrap: string;
  /** The runtime ({@link runtimeFiles}). */
  runtime: RuntimeFiles;
  /** Paths bound read-only: the read grant. */
  read: string[];
  /** Module and entry files bound read-only, even inside a write path. */
  code: string[];
  /** Paths bound read-write: the write grant. */
  write: string[];
  /** The trust base: bound read-only again wherever it falls inside a write path. */
  protect: string[];
  /** Secrets: masked (empty) wherever they fall inside a mounted path. */
  hide: string[];
  /**
   * Every sandbox's grant paths and the workspace: each one that lies inside
   * a write path here (and exists as itself) is pinned, with the folders
   * between, so that no tool here can replace it by a symlink.
   */
  pinned?: string[];
  /** A system runtime for subprocesses (`/usr`, `/bin`, `/lib*`, a minimal `/etc`). */
  system: boolean;
  /** Keep the host's network (never for corral's sandboxes: they hold `egress`). */
  net: boolean;
  /**
   * The host folder of the egress proxy's socket, bound read-only where the
   * sandbox finds it (core/guard/egress.ts); absent: no way out at all.
   */
  egressDir?: string;
  /** Name resolution and certificates (a sandbox that holds `n`). */
  netFiles?: boolean;
  /** The working directory inside. */
  cwd: string;
}

/** HOME inside the namespace: a directory on its private /tmp. */
export const NAMESPACE_HOME = "/tmp/home";

/** The `/etc` entries a system runtime gets: no shadow files, no keys, no host secrets. */
export const SYSTEM_ETC: readonly string[] = [
  "/etc/passwd",
  "/etc/group",
  "/etc/hosts",
  "/etc/host.conf",
  "/etc/resolv.conf",
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

/** The `/etc` entries a sandbox holding the network gets (names, certificates). */
export const NET_ETC: readonly string[] = [
  "/etc/hosts",
  "/etc/host.conf",
  "/etc/resolv.conf",
  "/etc/nsswitch.conf",
  "/etc/gai.conf",
  "/etc/ssl/certs",
  "/etc/ca-certificates",
];

const _SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

let _runtime: Promise<RuntimeFiles> | undefined;

/**
 * The runtime files of this process (memoized): its binary, the folders of
 * its shared libraries, and Deno's cache (run in the host). The first
 * caller may name a cache file for the libraries (./library_dirs.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeFiles } from "./namespace.ts";
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
      if (_exists(d)) libDirs.add(d);
    }
  }
  return { exec, libDirs: [...libDirs], denoDir: denoDir() };
}

/**
 * Deno's cache directory: `DENO_DIR`, else `$XDG_CACHE_HOME/deno`, else
 * `~/.cache/deno` (Linux), as a real path when it exists.
 */
export function denoDir(): string {
  const env = (n: string) => {
    try {
      return Deno.env.get(n) || undefined;
    } catch {
      return undefined;
    }
  };
  const dir = env("DENO_DIR") ??
    (env("XDG_CACHE_HOME") ? join(env("XDG_CACHE_HOME")!, "deno") : undefined) ??
    join(env("HOME") ?? "/root", ".cache", "deno");
  try {
    return Deno.realPathSync(dir);
  } catch {
    return dir;
  }
}

type _Kind = "ro" | "code" | "rw" | "pin" | "protect" | "hide";
const _RANK: Record<_Kind, number> = { ro: 0, rw: 1, pin: 2, code: 3, protect: 4, hide: 5 };

/** Whether `path` is `root` or inside it. */
export function isWithin(path: string, root: string): boolean {
  if (root === "/") return true;
  return path === root || path.startsWith(root.endsWith("/") ? root : root + "/");
}

/**
 * The flags every namespace starts with: all namespaces new (the network only
 * with `net`), its parent's life, no capabilities, own `/proc`, `/dev`, `/tmp`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespaceBase } from "./namespace.ts";
 * assert.ok(namespaceBase(false).join(" ").startsWith("--unshare-all --die-with-parent"));
 * ```
 */
export function namespaceBase(net: boolean): string[] {
  return [
    "--unshare-all",
    ...(net ? ["--share-net"] : []),
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    ..._OWN_MOUNTS.filter((m) => m[1] !== "/sys").flat(),
  ];
}

// The namespace's own /proc, /dev, /tmp with HOME, and an empty /sys: again
// after any grant that covers them (`/`, `/proc`, …), never the host's.
const _OWN_MOUNTS = [
  ["--proc", "/proc"],
  ["--dev", "/dev"],
  ["--tmpfs", "/sys", "--remount-ro", "/sys"],
  ["--tmpfs", "/tmp", "--dir", NAMESPACE_HOME],
];
const _OWN = ["/proc", "/dev", "/sys"];

/** The own mounts inside `p`, and the runtime files bound on its /tmp. */
function _ownAgain(p: string, rt: RuntimeFiles): string[] {
  const own = _OWN_MOUNTS.filter((m) => isWithin(m[1], p)).flat();
  if (!isWithin("/tmp", p)) return own;
  for (const d of rt.libDirs) if (isWithin(d, "/tmp")) own.push("--ro-bind-try", d, d);
  if (isWithin(rt.exec, "/tmp")) own.push("--ro-bind", rt.exec, rt.exec);
  if (isWithin(rt.denoDir, "/tmp")) own.push("--ro-bind-try", rt.denoDir, rt.denoDir);
  return own;
}

/** Whether a mount of `m` shows `p` (not inside an own mount that `m` covers). */
const _reaches = (p: string, m: string) =>
  isWithin(p, m) && ![..._OWN, "/tmp"].some((o) => isWithin(p, o) && (m === o || !isWithin(m, o)));

/**
 * The bwrap arguments of a namespace (the command follows after `--`).
 * `--bind-fd`/`--ro-bind-fd` name the PATH to open, and {@link VERIFY_ARG}
 * a path to check: the launcher (./limits.ts `limitedCommand` with
 * `openBinds`) opens them, checks them and hands bwrap the descriptors.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespaceArgs } from "./namespace.ts";
 * const runtime = { exec: "/usr/bin/deno", libDirs: ["/lib64"], denoDir: "/c/deno" };
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * Deno.mkdirSync(`${ws}/plugins`);
 * const args = namespaceArgs({
 *   bwrap: "/usr/bin/bwrap", runtime, read: [], code: [], write: [ws],
 *   protect: [`${ws}/plugins`], hide: [], system: false, net: false, cwd: ws,
 * }).join(" ");
 * assert.ok(args.includes(`--bind-fd ${ws} ${ws}`) && args.includes("--cap-drop ALL"));
 * assert.ok(args.indexOf(`--ro-bind-fd ${ws}/plugins`) > args.indexOf(`--bind-fd ${ws}`));
 * assert.ok(!args.includes("--share-net") && !args.split(" ").includes("/home"));
 * ```
 */
export function namespaceArgs(spec: NamespaceSpec): string[] {
  const args = namespaceBase(spec.net);
  const rt = spec.runtime;
  if (spec.system) {
    for (const d of _SYSTEM_DIRS) _systemDir(args, d);
    for (const e of SYSTEM_ETC) args.push("--ro-bind-try", e, e);
  } else if (spec.net || spec.netFiles) {
    // Name resolution and certificates for a sandbox that holds the network.
    for (const e of NET_ETC) args.push("--ro-bind-try", e, e);
  }
  for (const d of rt.libDirs) args.push("--ro-bind-try", d, d);
  args.push("--ro-bind", rt.exec, rt.exec);
  args.push("--ro-bind-try", rt.denoDir, rt.denoDir);

  // The grant, shallowest first so that deeper mounts land on top.
  const wanted = new Map<string, _Kind>();
  const want = (p: string, kind: _Kind) => {
    // Nothing of the host's /proc, /dev or /sys is bound.
    if (!isAbsolute(p) || _OWN.some((o) => isWithin(p, o))) return;
    const had = wanted.get(p);
    if (had === undefined || _RANK[kind] > _RANK[had]) wanted.set(p, kind);
  };
  for (const p of spec.read) want(p, "ro");
  for (const p of spec.write) want(p, "rw");
  for (const p of spec.code) want(p, "code");
  const mounted = [...spec.read, ...spec.write, ...spec.code];
  const writable = spec.write;
  const hidden = spec.hide.filter((p) => isAbsolute(p) && mounted.some((m) => _reaches(p, m)));
  const trusted = [...spec.protect, rt.exec, rt.denoDir, ...rt.libDirs].filter((p) =>
    writable.some((w) => _reaches(p, w))
  );
  // Inside a hidden folder there is nothing to see, nor to mount.
  const underHidden = (p: string) => hidden.some((h) => h !== p && isWithin(p, h));
  for (const p of trusted) if (!underHidden(p)) want(p, "protect");
  for (const p of hidden) if (!underHidden(p)) want(p, "hide");
  const grants = _grantPins(spec.pinned ?? [], writable, [...trusted, ...hidden, ...spec.code]);
  for (const p of grants) want(p, "pin");
  // A parent folder of a read-only mount could be renamed: every folder between
  // a write path and a protected path becomes a mount point of itself.
  for (const p of [...trusted, ...hidden, ...grants]) {
    if (underHidden(p)) continue;
    const w = writable.filter((x) =>
      x !== p && isWithin(p, x)
    ).sort((a, b) => b.length - a.length)[0];
    if (!w) continue;
    for (let a = dirname(p); a !== w && isWithin(a, w) && a !== "/"; a = dirname(a)) want(a, "pin");
  }
  const depth = (p: string) => p === "/" ? 1 : p.split("/").length;
  const order = [...wanted.entries()].sort((a, b) => depth(a[0]) - depth(b[0]));
  for (const [p, kind] of order) {
    // A read path inside a write path is already there, writable.
    if (kind === "ro" && writable.some((w) => w !== p && _reaches(p, w))) continue;
    const st = _stat(p);
    // Bound: what the launcher opened, exactly as named inside a write path,
    // else as first bound by this process. Not there: nothing (--bind-try).
    const src = writable.some((w) => isWithin(p, w)) ? p : _firstReal(p);
    switch (kind) {
      case "ro":
        if (st) args.push("--ro-bind-fd", p, p, ..._ownAgain(p, rt));
        break;
      case "code":
        if (st) args.push("--ro-bind-fd", src, p);
        break;
      case "rw":
        if (st) args.push("--bind-fd", p, p, ..._ownAgain(p, rt));
        break;
      case "pin":
        // Made now, on the host (inside a write path), so that it can be pinned.
        if (!st) Deno.mkdirSync(p, { recursive: true });
        args.push("--bind-fd", p, p);
        break;
      case "protect":
        if (st) args.push("--ro-bind-fd", src, p);
        else args.push("--tmpfs", p, "--remount-ro", p); // not there: keep it from being made
        break;
      case "hide":
        if (st && writable.some((w) => isWithin(p, w))) args.push(VERIFY_ARG, p);
        if (st?.isFile) args.push("--ro-bind", "/dev/null", p);
        else args.push("--tmpfs", p, "--remount-ro", p); // a folder, or not there yet
        break;
    }
  }
  // No tool builds a namespace of its own from inside this one.
  if (spec.system) {
    for (const d of ["/usr/bin", "/usr/sbin", "/usr/local/bin"]) {
      const b = join(d, "bwrap");
      if (_stat(b)?.isFile) args.push("--ro-bind", "/dev/null", b);
    }
  }
  if (spec.egressDir) {
    args.push("--ro-bind", spec.egressDir, dirname(EGRESS_SOCKET_IN_NAMESPACE));
  }
  _ownBinds(args, rt.own ?? [], hidden);
  // A sandbox that holds no files still starts in the workspace: an empty folder.
  if (!mounted.some((m) => _reaches(spec.cwd, m))) args.push("--dir", spec.cwd);
  else if (_exists(spec.cwd)) args.push(VERIFY_ARG, spec.cwd);
  args.push("--chdir", spec.cwd);
  return args;
}

/**
 * Other grant paths to pin here: inside a write path (not the write path
 * itself), not inside anything bound read-only over it, and there now as
 * exactly themselves (one that is already a symlink is not pinned: the
 * sandbox it belongs to refuses to start on it).
 */
function _grantPins(paths: string[], writable: string[], fixed: string[]): string[] {
  return [...new Set(paths)].filter((p) =>
    isAbsolute(p) && writable.some((w) => w !== p && isWithin(p, w)) &&
    !fixed.some((f) => isWithin(p, f)) && _realOrUndefined(p) === p
  );
}

const _real = new Map<string, string>();

/**
 * The real path of a path of the code or the trust base outside every write
 * path, as it was when this process first bound it (corral may be installed
 * through a symlink): a later change refuses the start.
 */
function _firstReal(p: string): string {
  let r = _real.get(p);
  if (r === undefined) {
    r = _realOrUndefined(p) ?? p;
    _real.set(p, r);
  }
  return r;
}

function _realOrUndefined(p: string): string | undefined {
  try {
    return Deno.realPathSync(p);
  } catch {
    return undefined;
  }
}

/**
 * `path` (a PATH value of the host) as a namespace with `spec`'s mounts sees
 * it: only the folders that are bound there (the system runtime, the grant).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespacePath } from "./namespace.ts";
 * const spec = { read: ["/ws"], write: [], system: true };
 * assert.equal(namespacePath("/root/.deno/bin:/usr/local/bin:/bin:/ws/bin", spec), "/usr/local/bin:/bin:/ws/bin");
 * assert.equal(namespacePath("/usr/bin:/opt/x", { ...spec, system: false }), "");
 * ```
 */
export function namespacePath(
  path: string,
  spec: Pick<NamespaceSpec, "read" | "write" | "system">,
): string {
  const bound = [...(spec.system ? _SYSTEM_DIRS : []), ...spec.read, ...spec.write]
    .filter((b) => isAbsolute(b));
  return path.split(":").filter((d) => isAbsolute(d) && bound.some((b) => isWithin(d, b)))
    .join(":");
}

/** The sandbox's own files from the code store: inside a hidden folder, on a fresh tmpfs there. */
function _ownBinds(args: string[], binds: Array<[string, string]>, hidden: string[]): void {
  const under = new Map<string, Array<[string, string]>>();
  for (const bind of binds) {
    const h = hidden.filter((x) => isWithin(bind[1], x)).sort((a, b) => a.length - b.length)[0];
    under.set(h ?? "", [...(under.get(h ?? "") ?? []), bind]);
  }
  for (const [h, list] of under) {
    if (h) args.push("--tmpfs", h);
    for (const [from, to] of list) args.push("--ro-bind-fd", from, to);
    if (h) args.push("--remount-ro", h);
  }
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

function _exists(p: string): boolean {
  return _stat(p) !== undefined;
}
