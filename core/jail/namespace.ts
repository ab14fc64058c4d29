/**
 * The sandbox namespace: the bubblewrap (`bwrap`) mount namespace a process
 * sandbox runs in. Its mounts ARE the grant: read paths read-only, write
 * paths writable through an overlay whose upper layer is the sandbox's own
 * (core/layers/ judges and applies what was written there), plus what the
 * runtime needs (read-only), and nothing else: no `/home`, `/root`, `/run`,
 * no host `/tmp`, `/proc`, `/dev` or `/sys` even under a grant of `/`.
 * Subprocesses inherit the namespace.
 *
 * Each step lives in a module of its own: the namespace's own mounts
 * (./own_mounts.ts), the runtime (./namespace_runtime.ts), the grant
 * (./grant_mounts.ts), and the launcher that opens, checks and mounts what
 * the arguments name (./launcher.ts). Every path bound from the grant, the
 * code, the trust base inside write paths and the working directory is
 * opened at start, checked to be exactly the path the policy named, and
 * that open file is what bwrap binds (`--bind-fd`).
 *
 * All capabilities are dropped, so code inside cannot remount anything;
 * `bwrap` itself is masked so that no tool can build a namespace of its own
 * from inside.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { EGRESS_SOCKET_IN_NAMESPACE } from "../guard/mod.ts";
import { grantMounts } from "./grant_mounts.ts";
import { isWithin } from "../base/mod.ts";
import { NETNS_ARG, SECCOMP_ARG, VERIFY_ARG } from "./launcher.ts";
import { type RuntimeFiles, runtimeMounts, SYSTEM_DIRS } from "./namespace_runtime.ts";
import { OWN_MOUNTS, reaches } from "./own_mounts.ts";

export { isWithin } from "../base/mod.ts";
export { NAMESPACE_HOME } from "./own_mounts.ts";
export { NET_ETC, type RuntimeFiles, runtimeFiles, SYSTEM_ETC } from "./namespace_runtime.ts";

/** One namespace, as {@link namespaceArgs} builds it. */
export interface NamespaceSpec {
  /** The working bwrap binary. */
  bwrap: string;
  /** The runtime (./namespace_runtime.ts `runtimeFiles`). */
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
  /** Write roots mounted as overlays, each with its layer folder (core/layers/). */
  layers?: ReadonlyMap<string, string>;
  /** A system runtime for subprocesses (`/usr`, `/bin`, `/lib*`, a minimal `/etc`). */
  system: boolean;
  /** Keep the host's network (never for corral's sandboxes: they hold `egress`). */
  net: boolean;
  /**
   * The host folder of the egress proxy's socket, bound read-only where the
   * sandbox finds it (core/egress/egress.ts); absent: no way out at all.
   */
  egressDir?: string;
  /** Name resolution and certificates (a sandbox that holds `n`). */
  netFiles?: boolean;
  /**
   * The launcher makes the network namespace (./launcher.ts `NETNS_ARG`),
   * with these addresses on its loopback: a sandbox with forwarders
   * (../egress/egress_forward.ts). Absent: bwrap makes it (only loopback).
   */
  netns?: readonly string[];
  /**
   * corral's own `passwd`, `group`, `hosts` and `resolv.conf`
   * (./namespace_etc.ts `etcFiles`), bound with the system runtime or the
   * name-resolution files; absent: none of them.
   */
  etc?: string;
  /**
   * The jail's second wall: a compiled syscall filter (core/seccomp/), as
   * {@link seccompArgs} loads it; absent: none (an explicit opt-out).
   */
  seccomp?: SeccompFiles;
  /** The working directory inside. */
  cwd: string;
}

/** A compiled syscall filter for bwrap (core/seccomp/ `JailFilter`). */
export interface SeccompFiles {
  /** The programs, loaded in this order. */
  files: readonly string[];
  /** User namespaces stay possible inside (a granted exception): no `--disable-userns`. */
  userns: boolean;
}

/** A namespace's bwrap arguments and the mount points it makes in its write layers. */
export interface NamespaceLayout {
  /** bwrap arguments (the command follows after `--`). */
  args: string[];
  /** Mount points made inside a layered write root: not the tool's changes. */
  artifacts: string[];
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
    ...OWN_MOUNTS.filter((m) => m[1] !== "/sys").flat(),
  ];
}

/**
 * The bwrap arguments of a namespace (the command follows after `--`):
 * {@link namespaceLayout}'s arguments.
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
  return namespaceLayout(spec).args;
}

/**
 * A namespace, step by step: the base (./own_mounts.ts), the runtime
 * (./namespace_runtime.ts), the grant (./grant_mounts.ts), bwrap masked,
 * the egress socket, corral's own files, the working directory.
 * `--bind-fd`/`--ro-bind-fd` name the PATH to open, `VERIFY_ARG` a path to
 * check and `OVERLAY_ARG` a layered write root: the launcher
 * (./launcher.ts) opens, checks and mounts them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespaceLayout } from "./namespace.ts";
 * const runtime = { exec: "/usr/bin/deno", libDirs: ["/lib64"], denoDir: "/c/deno" };
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * const { args, artifacts } = namespaceLayout({
 *   bwrap: "/usr/bin/bwrap", runtime, read: [], code: [], write: [ws], protect: [],
 *   hide: [`${ws}/logs/audit.jsonl`], layers: new Map([[ws, "/l/1"]]), system: false,
 *   net: false, cwd: ws,
 * });
 * assert.ok(args.join(" ").includes(`--tmpfs ${ws}/logs/audit.jsonl`));
 * assert.deepEqual(artifacts, [`${ws}/logs/audit.jsonl`, `${ws}/logs`]);
 * ```
 */
export function namespaceLayout(spec: NamespaceSpec): NamespaceLayout {
  const rt = spec.runtime;
  const args = namespaceBase(spec.net);
  if (spec.seccomp) args.push(...seccompArgs(spec.seccomp));
  if (spec.netns && !spec.net) args.push(NETNS_ARG, spec.netns.join(",") || "-");
  args.push(
    ...runtimeMounts(rt, {
      system: spec.system,
      netFiles: !!(spec.net || spec.netFiles),
      ...(spec.etc ? { etc: spec.etc } : {}),
    }),
  );
  const grant = grantMounts(spec);
  args.push(...grant.args);
  // No tool builds a namespace of its own from inside this one.
  if (spec.system) args.push(..._maskBwrap());
  if (spec.egressDir) {
    args.push("--ro-bind", spec.egressDir, dirname(EGRESS_SOCKET_IN_NAMESPACE));
  }
  const mounted = [...spec.read, ...spec.write, ...spec.code];
  const hidden = spec.hide.filter((p) => isAbsolute(p) && mounted.some((m) => reaches(p, m)));
  args.push(..._ownBinds(rt.own ?? [], hidden));
  // A sandbox that holds no files still starts in the workspace: an empty folder.
  if (!mounted.some((m) => reaches(spec.cwd, m))) args.push("--dir", spec.cwd);
  else if (_stat(spec.cwd)) args.push(VERIFY_ARG, spec.cwd);
  args.push("--chdir", spec.cwd);
  return { args, artifacts: grant.artifacts };
}

/**
 * The bwrap arguments of the second wall: a user namespace of its own
 * (which `--disable-userns` needs, even for root), no nested one unless an
 * exception keeps them, and each filter opened by the launcher
 * (./launcher.ts `SECCOMP_ARG`), loaded right before the namespace's first
 * program.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seccompArgs } from "./namespace.ts";
 * const args = seccompArgs({ files: ["/c/a.bpf", "/c/b.bpf"], userns: false });
 * assert.deepEqual(args.slice(0, 2), ["--unshare-user", "--disable-userns"]);
 * assert.equal(args.filter((a) => a === "--corral-seccomp").length, 2);
 * ```
 */
export function seccompArgs(seccomp: SeccompFiles): string[] {
  return [
    "--unshare-user",
    ...(seccomp.userns ? [] : ["--disable-userns"]),
    ...seccomp.files.flatMap((f) => [SECCOMP_ARG, f]),
  ];
}

function _maskBwrap(): string[] {
  const args: string[] = [];
  for (const d of ["/usr/bin", "/usr/sbin", "/usr/local/bin"]) {
    const b = join(d, "bwrap");
    if (_stat(b)?.isFile) args.push("--ro-bind", "/dev/null", b);
  }
  return args;
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
  const bound = [...(spec.system ? SYSTEM_DIRS : []), ...spec.read, ...spec.write]
    .filter((b) => isAbsolute(b));
  return path.split(":").filter((d) => isAbsolute(d) && bound.some((b) => isWithin(d, b)))
    .join(":");
}

/** The sandbox's own files from the code store: inside a hidden folder, on a fresh tmpfs there. */
function _ownBinds(binds: Array<[string, string]>, hidden: string[]): string[] {
  const args: string[] = [];
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
  return args;
}

function _stat(p: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(p);
  } catch {
    return undefined;
  }
}
