/**
 * Whether a sandbox runs in the jail: the namespace (bwrap, the first wall)
 * and the syscall filter (core/seccomp/, the second), or without them, or
 * not at all. Fail closed: a process sandbox that holds files or commands
 * needs both, unless the operator opted out of one explicitly (`"jail":
 * "off"`, `"seccomp": "off"`, `"isolation": "worker"`); without the jail it
 * does not start, and the reason names the fix and the opt-out.
 *
 * @module
 */
import type { JailStatus } from "../jail/mod.ts";
import { type SecondWall, WALL_MISSING, type WallStatus } from "../seccomp/mod.ts";
import { holdsFilesOrCommands } from "../sandbox/mod.ts";
import type { Grant } from "../tool/mod.ts";
import type { ToolsetSource } from "./toolset_source.ts";

/** Where a sandbox runs, and why it cannot run at all (`missing`). */
export interface Confinement {
  status: JailStatus;
  missing?: string;
  /** In the namespace: its second wall (the filter, or the operator's opt-out). */
  wall?: WallStatus;
}

/** What {@link confine} decides with. */
export interface ConfineOptions {
  /** The working bwrap binary, if any (see core/jail/jail.ts). */
  bwrap: string | undefined;
  /** Why there is no working bwrap, for messages (default: none found, or none on this OS). */
  bwrapMissing?: string;
  /** The registry's syscall filters (core/seccomp/wall.ts); absent: none can be had. */
  wall?: SecondWall;
}

/**
 * Whether a sandbox of `source` holding `grant` runs in the jail (`bwrap`,
 * with its second wall) or not (`none`), and why it cannot run at all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { confine } from "./_confine.ts";
 * const policy = { isolation: "process", where: "toolsets.system" } as never;
 * const source = { id: "system", kind: "builtin", modules: [], policy } as never;
 * const grant = { read: [], write: [], run: ["bash"], net: [] };
 * assert.match(confine(source, grant, { bwrap: undefined }).missing!, /install bubblewrap/);
 * assert.match(confine(source, grant, { bwrap: "/usr/bin/bwrap" }).missing!, /"seccomp": "off"/);
 * ```
 */
export function confine(source: ToolsetSource, grant: Grant, o: ConfineOptions): Confinement {
  const p = source.policy;
  // A worker forced by the host's flags (./host_fallback.ts) holds files only for corral's
  // own read-only tools, which check every path they open; nothing there writes or runs.
  if (
    p.fallback && holdsFilesOrCommands(grant) &&
    (source.kind !== "builtin" || grant.write.length || grant.run.length)
  ) {
    return {
      status: "none",
      missing: `needs the sandbox namespace, but ${p.fallback}: start corral with ` +
        `--allow-run (and --allow-write for corral's caches) for its process sandbox`,
    };
  }
  if (p.isolation === "worker" || p.jail === "off") return { status: "none" };
  const holds = holdsFilesOrCommands(grant) || source.kind === "server";
  if (o.bwrap) {
    const wall = o.wall?.status(p) ?? {
      state: "missing",
      why: `${WALL_MISSING}, a syscall filter, but none was made for it; opt ` +
        `out explicitly with "seccomp": "off" in ${p.where} of ${p.file ?? "permissions.json"}`,
    };
    if (wall.state !== "missing") return { status: "bwrap", wall };
    // As without bwrap: a sandbox that holds nothing runs without the jail, never half of it.
    return holds ? { status: "none", missing: wall.why } : { status: "none" };
  }
  if (!holds) return { status: "none" };
  return {
    status: "none",
    missing: `needs the sandbox namespace, but ${
      o.bwrapMissing ??
        (Deno.build.os === "linux"
          ? "no working bwrap was found"
          : `bubblewrap does not exist on ${Deno.build.os}`)
    }: install bubblewrap (apt-get install bubblewrap), or opt out explicitly with ` +
      `"jail": "off" in ${p.where} of ${p.file ?? "permissions.json"}`,
  };
}
