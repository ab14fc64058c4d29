/**
 * The operator's part of the protected paths (core/guard/planted.ts):
 * `"protect"` adds entries, `"unprotect"` lifts default ones, one path at a
 * time, in permissions.json. Checked when the policy loads: a lifted entry
 * that is no default is an error with "did you mean".
 *
 * @module
 */
import { ConfigError } from "../tool/mod.ts";
import {
  normalizeEntry,
  PLANTED_DEFAULT_ENTRIES,
  PLANTED_DEFAULTS,
  plantedEntries,
} from "../guard/mod.ts";
import { closestNames } from "./closest.ts";

/** The protected entries of a policy, and the defaults it lifts. */
export interface ProtectedPaths {
  /** The entries every sandbox of this policy keeps read-only. */
  entries: string[];
  /** Default entries the operator lifted (the banner names them). */
  lifted: string[];
}

/**
 * Check and combine `protect` and `unprotect` of `file`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { protectedPaths } from "./protected_paths.ts";
 * const p = protectedPaths(["build.sh"], [".vscode/"], "permissions.json");
 * assert.ok(p.entries.includes("build.sh") && !p.entries.includes(".vscode/"));
 * assert.throws(() => protectedPaths([], [".vscod"], "p.json"), /did you mean "\.vscode\/"/);
 * ```
 */
export function protectedPaths(
  protect: string[] = [],
  unprotect: string[] = [],
  file: string,
): ProtectedPaths {
  const problems: string[] = [];
  const norm = (list: string[], key: string) =>
    list.flatMap((e, i) => {
      try {
        return [normalizeEntry(e)];
      } catch (err) {
        problems.push(`${file}: ${key}[${i}]: ${(err as Error).message}`);
        return [];
      }
    });
  const extra = norm(protect, "protect");
  const lifted: string[] = [];
  norm(unprotect, "unprotect").forEach((e, i) => {
    const key = (s: string) => s.replace(/\/+$/, "").toLowerCase();
    const known = PLANTED_DEFAULT_ENTRIES.find((d) => key(d) === key(e));
    if (known) {
      lifted.push(known);
      return;
    }
    const near = closestNames(e, [...PLANTED_DEFAULT_ENTRIES], 1, Math.max(2, e.length / 3));
    problems.push(
      `${file}: unprotect[${i}]: "${e}" is not a protected default` +
        (near.length ? ` (did you mean "${near[0]}"?)` : "") +
        `; the defaults are listed in docs/security.md, "Protected files"`,
    );
  });
  if (problems.length) throw new ConfigError(problems.join("\n"));
  return { entries: plantedEntries(extra, lifted), lifted };
}

/** What a lifted default protected, for the banner. */
export function liftedWhy(entry: string): string {
  return PLANTED_DEFAULTS.find((d) => d.entry === entry)?.why ?? "";
}
