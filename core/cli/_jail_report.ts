/**
 * What `corral config` says of the jail on this machine: the namespace
 * (bwrap, the first wall) and the syscall filter (core/seccomp/, the
 * second), each found or missing with its cause and fix.
 *
 * @module
 */
import { join } from "node:path";
import type { Policy } from "../config/mod.ts";
import { findBwrap } from "../jail/mod.ts";
import { defaultCacheDir, secondWall } from "../registry/mod.ts";

/** The jail here. */
export interface JailReport {
  /** The working bwrap, or null. */
  bwrap: string | null;
  /** The filter without exceptions: its programs, or why it cannot be had. */
  seccomp: { rules: string; files?: readonly string[]; missing?: string };
}

/** Find both walls as a start of corral would. */
export async function jailReport(policy: Policy): Promise<JailReport> {
  const cache = defaultCacheDir();
  const bwrap = await findBwrap({ cacheFile: cache ? join(cache, "bwrap.json") : undefined });
  const wall = await secondWall(bwrap, policy);
  const base = wall.status({ where: "defaults", file: policy.editFile });
  return {
    bwrap: bwrap ?? null,
    seccomp: {
      rules: "core/seccomp/rules.ts",
      ...(base.state === "on" ? { files: base.filter.files } : { missing: wall.missing }),
    },
  };
}

/**
 * The report as lines.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jailLines } from "./_jail_report.ts";
 * const lines = jailLines({ bwrap: null, seccomp: { rules: "r.ts", missing: "no python" } });
 * assert.match(lines[0], /MISSING/);
 * assert.match(lines[1], /MISSING: no python.*"seccomp": "off"/);
 * ```
 */
export function jailLines(r: JailReport): string[] {
  return [
    r.bwrap
      ? `namespace (the first wall): bwrap at ${r.bwrap}`
      : `namespace (the first wall): MISSING: no working bwrap was found; install bubblewrap ` +
        `(apt-get install bubblewrap), or opt out with "jail": "off" in permissions.json`,
    r.seccomp.files
      ? `syscall filter (the second wall): on, the rules of ${r.seccomp.rules} compiled by ` +
        `libseccomp, kept in ${r.seccomp.files.join(" and ")}`
      : `syscall filter (the second wall): MISSING: ${r.seccomp.missing}; sandboxes that hold ` +
        `files or commands, and hosted servers, do not start; opt out with "seccomp": "off" ` +
        `in permissions.json`,
  ];
}
