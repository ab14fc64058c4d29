/**
 * The grant's own mounts in a sandbox namespace: read paths read-only, write
 * paths writable, the code read-only, then the trust base bound read-only
 * again and secrets masked wherever they fall inside a mounted path.
 *
 * A write root (a write path not inside another) that is a folder and has
 * a layer is mounted as an overlay whose upper layer is the sandbox's own
 * (./launcher.ts, core/layers/): what the sandbox writes, mount points
 * included, stays there until the host judges and applies it, so nothing
 * is made on the host to hold a protected name. A missing path of the
 * trust base inside a layered root is left unmounted (core/layers/ refuses
 * to apply a change there); a missing secret is masked all the same, on a
 * mount point made in the upper layer (an artifact, never applied).
 *
 * @module
 */
import { dirname, isAbsolute } from "node:path";
import { isWithin } from "../base/mod.ts";
import { OVERLAY_ARG, VERIFY_ARG } from "./launcher.ts";
import { runtimeAgain, type RuntimeFiles } from "./namespace_runtime.ts";
import { OWN_ROOTS, ownAgain, reaches } from "./own_mounts.ts";

/** What {@link grantMounts} binds. */
export interface GrantMountSpec {
  runtime: RuntimeFiles;
  /** Paths bound read-only: the read grant. */
  read: string[];
  /** Module and entry files bound read-only, even inside a write path. */
  code: string[];
  /** Paths bound writable: the write grant. */
  write: string[];
  /** The trust base: bound read-only again wherever it falls inside a write path. */
  protect: string[];
  /** Secrets: masked (empty) wherever they fall inside a mounted path. */
  hide: string[];
  /** Write roots mounted as an overlay, each with its layer folder (core/layers/). */
  layers?: ReadonlyMap<string, string>;
}

/** The mounts of {@link grantMounts}. */
export interface GrantMounts {
  /** bwrap arguments (with the launcher's pseudo-options). */
  args: string[];
  /**
   * Mount points bwrap makes inside a layered write root (a missing secret
   * and its missing folders): they exist only in the sandbox's upper layer
   * and are not changes of the tool's.
   */
  artifacts: string[];
}

type _Kind = "ro" | "code" | "rw" | "protect" | "hide";
const _RANK: Record<_Kind, number> = { ro: 0, rw: 1, code: 2, protect: 3, hide: 4 };

/**
 * The grant's mounts, shallowest first so that deeper mounts land on top.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { grantMounts } from "./grant_mounts.ts";
 * const runtime = { exec: "/usr/bin/deno", libDirs: ["/lib64"], denoDir: "/c/deno" };
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * Deno.mkdirSync(`${ws}/plugins`);
 * const m = grantMounts({
 *   runtime, read: [], code: [], write: [ws], protect: [`${ws}/plugins`, `${ws}/gone`],
 *   hide: [], layers: new Map([[ws, "/layers/1"]]),
 * });
 * const args = m.args.join(" ");
 * assert.ok(args.includes(`--corral-overlay ${ws} /layers/1`));
 * assert.ok(args.indexOf(`--ro-bind-fd ${ws}/plugins`) > args.indexOf("--corral-overlay"));
 * assert.ok(!args.includes(`${ws}/gone`)); // missing: judged when applied, never made here
 * ```
 */
export function grantMounts(spec: GrantMountSpec): GrantMounts {
  const rt = spec.runtime;
  const writable = spec.write;
  const mounted = [...spec.read, ...spec.write, ...spec.code];
  const hidden = spec.hide.filter((p) => isAbsolute(p) && mounted.some((m) => reaches(p, m)));
  const cache = rt.scratchDenoDir ? [] : [rt.denoDir];
  const trusted = [...spec.protect, rt.exec, ...cache, ...rt.libDirs].filter((p) =>
    writable.some((w) => reaches(p, w))
  );
  // Inside a hidden folder there is nothing to see, nor to mount.
  const underHidden = (p: string) => hidden.some((h) => h !== p && isWithin(p, h));
  const wanted = new Map<string, _Kind>();
  const want = (p: string, kind: _Kind) => {
    // Nothing of the host's /proc, /dev or /sys is bound.
    if (!isAbsolute(p) || OWN_ROOTS.some((o) => isWithin(p, o))) return;
    const had = wanted.get(p);
    if (had === undefined || _RANK[kind] > _RANK[had]) wanted.set(p, kind);
  };
  for (const p of spec.read) want(p, "ro");
  for (const p of writable) want(p, "rw");
  for (const p of spec.code) want(p, "code");
  for (const p of trusted) if (!underHidden(p)) want(p, "protect");
  for (const p of hidden) if (!underHidden(p)) want(p, "hide");
  const depth = (p: string) => p === "/" ? 1 : p.split("/").length;
  const order = [...wanted.entries()].sort((a, b) => depth(a[0]) - depth(b[0]));
  const out: GrantMounts = { args: [], artifacts: [] };
  for (const [p, kind] of order) {
    // A read path inside a write path is already there, writable.
    if (kind === "ro" && writable.some((w) => w !== p && reaches(p, w))) continue;
    _emit(out, p, kind, spec, writable);
  }
  return out;
}

function _emit(
  out: GrantMounts,
  p: string,
  kind: _Kind,
  spec: GrantMountSpec,
  writable: string[],
): void {
  const args = out.args;
  const st = _stat(p);
  const inWrite = writable.some((w) => isWithin(p, w));
  // Bound: what the launcher opened, exactly as named inside a write path,
  // else as first bound by this process. Not there: nothing.
  const src = inWrite ? p : _firstReal(p);
  const layer = _layerOf(p, writable, spec.layers);
  switch (kind) {
    case "ro":
      if (st) args.push("--ro-bind-fd", p, p, ..._again(p, spec.runtime));
      return;
    case "code":
      if (st) args.push("--ro-bind-fd", src, p);
      return;
    case "rw": {
      const own = spec.layers?.get(p);
      if (own && st?.isDirectory) args.push(OVERLAY_ARG, p, own);
      else if (st) args.push("--bind-fd", p, p);
      if (st) args.push(..._again(p, spec.runtime));
      return;
    }
    case "protect":
      if (st) args.push("--ro-bind-fd", src, p);
      // Not there: inside a layer nothing made here can reach the host (judged when
      // applied); inside a plain write bind, a read-only mount keeps it from being made.
      else if (!layer) args.push("--tmpfs", p, "--remount-ro", p);
      return;
    case "hide":
      if (st && inWrite) args.push(VERIFY_ARG, p);
      if (st?.isFile) args.push("--ro-bind", "/dev/null", p);
      else args.push("--tmpfs", p, "--remount-ro", p); // a folder, or not there yet
      if (!st && layer) out.artifacts.push(..._missingUpTo(p, layer));
      return;
  }
}

/** The own mounts a mount of `p` covers, made again over it, then the runtime's files on /tmp. */
function _again(p: string, rt: RuntimeFiles): string[] {
  return [...ownAgain(p), ...runtimeAgain(p, rt)];
}

/** The layered write root holding `p` (not `p` itself), if any. */
function _layerOf(
  p: string,
  writable: string[],
  layers: ReadonlyMap<string, string> | undefined,
): string | undefined {
  if (!layers) return undefined;
  return writable.find((w) => w !== p && isWithin(p, w) && layers.has(w));
}

/** `p` and each folder above it that is missing, up to `root` (not included). */
function _missingUpTo(p: string, root: string): string[] {
  const out: string[] = [];
  for (let a = p; a !== root && isWithin(a, root) && a !== "/"; a = dirname(a)) {
    if (a !== p && _stat(a)) break;
    out.push(a);
  }
  return out;
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
    try {
      r = Deno.realPathSync(p);
    } catch {
      r = p;
    }
    _real.set(p, r);
  }
  return r;
}

function _stat(p: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(p);
  } catch {
    return undefined;
  }
}
