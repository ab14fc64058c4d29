/**
 * A running sandbox seen from the host, for the refresh of its view
 * (./view_refresh.ts): what its processes hold in the tree (open files,
 * working folders, mapped files), the pause that keeps them from writing
 * while corral clears its upper layer, and the remount that drops what its
 * overlays cached.
 *
 * Every sandbox process descends from its launcher (`pid`: bwrap's outer
 * process, which stays in the launcher's own mount namespace where the
 * overlays are mounted at `LAYER/m`), since bwrap gives the sandbox a PID
 * namespace of its own. Deno may not read `/proc` without `--allow-all`, so
 * `/bin/bash` and findutils read it for the host: ./view_procs.sh, which
 * stops the processes too.
 *
 * @module
 */
import { userId } from "../config/mod.ts";
import { shellProgram } from "../base/mod.ts";

/**
 * What one sandbox process holds: an open file, its working folder, a
 * mapped file, or (for the whole sandbox) a mount point.
 */
export interface HeldEntry {
  kind: "fd" | "cwd" | "map" | "mount";
  /** The inode as the process sees it (an overlay's file shows its real inode). */
  ino: number;
  /** The path in the sandbox's namespace (write roots are bound at their own paths). */
  path: string;
}

/** The sandbox's processes, paused, and what they hold. */
export interface Paused {
  held: HeldEntry[];
  /** Let them go on; false when the pause had already ended (its time limit). */
  resume(): Promise<boolean>;
}

/** How long a pause may last at most (ms): past it the helper lets the sandbox go on by itself. */
export const MAX_PAUSE_MS = 120_000;

/**
 * What the processes of the sandbox whose launcher is `pid` hold, without
 * stopping them (undefined when they cannot be looked at).
 */
export async function lookAtSandbox(pid: number): Promise<HeldEntry[] | undefined> {
  try {
    const out = await _helper(pid, "look", "null").output();
    return out.success ? parseHeld(out.stdout) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stop every process of the sandbox whose launcher is `pid` (SIGSTOP, each
 * one forked meanwhile too) and report what they hold; undefined when they
 * could not all be stopped (then none stays stopped). A helper keeps the
 * pause and ends it on {@link Paused.resume}, when corral's end closes its
 * input, or after {@link MAX_PAUSE_MS}.
 */
export async function pauseSandbox(pid: number): Promise<Paused | undefined> {
  let child: Deno.ChildProcess;
  try {
    child = _helper(pid, "pause", "piped").spawn();
  } catch {
    return undefined;
  }
  const writer = child.stdin.getWriter();
  const report = new Uint8Array(await new Response(child.stdout).arrayBuffer());
  const resume = async () => {
    await writer.write(new TextEncoder().encode("go\n")).catch(() => {});
    await writer.close().catch(() => {});
    return (await child.status).code === 0;
  };
  // The report starts with "p" once every process is stopped; else the helper gave up.
  if (report[0] !== 0x70 || report[1] !== 0) {
    await resume();
    return undefined;
  }
  return { held: parseHeld(report.subarray(2)), resume };
}

/**
 * Drop the cached entries of the overlays mounted at `mounts` in the mount
 * namespace of the launcher `pid`: a remount of each (`mount -o remount`,
 * its options unchanged) makes the kernel shed the superblock's unused
 * dentries, so the next lookup asks the tree and the upper layer again.
 * Returns why it failed, or undefined.
 */
export async function remountLayers(pid: number, mounts: string[]): Promise<string | undefined> {
  const nsenter = nsenterBinary();
  if (!nsenter) return "util-linux's nsenter is not installed";
  const ns = userId() === 0
    ? ["-t", String(pid), "-m"]
    : ["-t", String(pid), "-U", "-m", "--preserve-credentials"];
  try {
    const out = await new Deno.Command(nsenter, {
      args: [
        ...ns,
        "--",
        "/bin/sh",
        "-c",
        'for m do mount -o remount "$m" || exit 1; done',
        "corral-view",
        ...mounts,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", LC_ALL: "C" },
    }).output();
    if (out.success) return undefined;
    const why = new TextDecoder().decode(out.stderr).split("\n").find((l) => l.trim());
    return `its overlay could not be remounted${why ? ` (${why.trim().slice(0, 200)})` : ""}`;
  } catch (err) {
    return `its overlay could not be remounted (${(err as Error).message})`;
  }
}

/**
 * The helper's NUL-separated records as held entries.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseHeld } from "./view_procs.ts";
 * const raw = "l\0/proc/7/fd/3\0/ws/a.txt\0i\0/proc/7/fd/3\0" + "42\0l\0/proc/7/cwd\0/ws\0" +
 *   "i\0/proc/7/cwd\0" + "5\0m\0" + "9\0t\0/ws/a\\040b\0";
 * assert.deepEqual(parseHeld(new TextEncoder().encode(raw)), [
 *   { kind: "fd", ino: 42, path: "/ws/a.txt" },
 *   { kind: "cwd", ino: 5, path: "/ws" },
 *   { kind: "map", ino: 9, path: "" },
 *   { kind: "mount", ino: 0, path: "/ws/a b" },
 * ]);
 * ```
 */
export function parseHeld(raw: Uint8Array): HeldEntry[] {
  const f = new TextDecoder().decode(raw).split("\0");
  const links = new Map<string, string>();
  const inos = new Map<string, number>();
  const out: HeldEntry[] = [];
  for (let i = 0; i < f.length;) {
    const t = f[i];
    if (t === "l" || t === "i") {
      if (t === "l") links.set(f[i + 1], f[i + 2]);
      else inos.set(f[i + 1], Number(f[i + 2]));
      i += 3;
    } else if (t === "m") {
      const ino = Number(f[i + 1]);
      if (ino > 0) out.push({ kind: "map", ino, path: "" });
      i += 2;
    } else if (t === "t") {
      // mountinfo escapes space, tab, newline and backslash as octal.
      const path = f[i + 1].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
      out.push({ kind: "mount", ino: 0, path });
      i += 2;
    } else i++;
  }
  const entries: HeldEntry[] = [];
  for (const [proc, target] of links) {
    const ino = inos.get(proc);
    if (ino === undefined || !target.startsWith("/")) continue;
    entries.push({
      kind: proc.endsWith("/cwd") ? "cwd" : "fd",
      ino,
      path: target.replace(/ \(deleted\)$/, ""),
    });
  }
  return [...entries, ...out];
}

function _helper(pid: number, mode: string, stdin: "null" | "piped"): Deno.Command {
  return new Deno.Command("/bin/bash", {
    args: [
      shellProgram("core/layers/view_procs.sh"),
      String(pid),
      mode,
      String(MAX_PAUSE_MS / 1000),
    ],
    stdin,
    stdout: "piped",
    stderr: "null",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  });
}

let _nsenter: string | undefined | null = null;

/** util-linux's `nsenter`, or undefined when it is not installed. */
export function nsenterBinary(): string | undefined {
  if (_nsenter !== null) return _nsenter;
  for (const p of ["/usr/bin/nsenter", "/bin/nsenter", "/usr/sbin/nsenter"]) {
    try {
      if (Deno.statSync(p).isFile) return _nsenter = p;
    } catch { /* not there */ }
  }
  return _nsenter = undefined;
}
