/**
 * What a start of corral says about the registry it opened, one warning a
 * line: tools that run without the sandbox namespace or its syscall filter
 * (an opt-out), tools the missing filter keeps from loading, the
 * protected paths the policy lifts, process limits that do not bind, and
 * `plugins.NAME` entries of the policy that no plugin has (a typo grants
 * nothing, silently).
 *
 * @module
 */
import { closestNames, liftedWhy } from "../config/mod.ts";
import { limitsMissing } from "../jail/mod.ts";
import { holdsFilesOrCommands } from "../sandbox/mod.ts";
import { WALL_MISSING } from "../seccomp/mod.ts";
import type { Registry } from "./registry.ts";

/** The warnings of `registry`'s start, in the order a banner says them. */
export function registryBanner(registry: Registry): string[] {
  const lines: string[] = [];
  const open = new Map<string, string[]>();
  for (const t of registry.loaded()) {
    if (t.jail !== "none" || !holdsFilesOrCommands(t.grant)) continue;
    const why = t.fallback
      ? `a worker: ${t.fallback}`
      : t.isolation === "worker"
      ? `isolation "worker" in the policy`
      : `"jail": "off" in the policy`;
    open.set(why, [...(open.get(why) ?? []), t.name]);
  }
  for (const [why, names] of open) {
    lines.push(
      `Warning: ${names.length} tool${names.length > 1 ? "s" : ""} run WITHOUT the sandbox ` +
        `namespace (${why}): ${names.join(", ")}`,
    );
  }
  lines.push(..._secondWall(registry));
  lines.push(..._unknownPlugins(registry));
  // An operator who lifts a protected path hears it at every start (docs/security.md, Protected files).
  const { policy } = registry;
  for (const entry of policy.unprotected) {
    lines.push(
      `Warning: ${policy.origin("unprotect")} lifts the protection of "${entry}" (unprotect): ` +
        `tools with a write grant may change it, and ${liftedWhy(entry)} outside the sandbox`,
    );
  }
  // Without a cgroup and as root, process sandboxes are refused unless the policy opts out.
  const missing = limitsMissing(false);
  if (missing) lines.push(`Warning: ${missing}`);
  return lines;
}

/**
 * The jail's second wall (core/seccomp/): tools behind the namespace without
 * the syscall filter (the operator's `"seccomp": "off"`), and tools that do
 * not load because the filter cannot be had (its cause and the opt-out).
 */
function _secondWall(registry: Registry): string[] {
  const off = registry.loaded().filter((t) => t.jail === "bwrap" && t.seccomp?.filter === "off");
  const lines = off.length
    ? [
      `Warning: ${off.length} tool${off.length > 1 ? "s" : ""} run WITHOUT the jail's syscall ` +
      `filter ("seccomp": "off" in the policy): ${off.map((t) => t.name).join(", ")}`,
    ]
    : [];
  const missing = registry.list().filter((t) =>
    t.status === "skipped" && t.reason?.startsWith(WALL_MISSING)
  );
  if (missing.length) {
    lines.push(
      `Warning: ${missing.length} tool${missing.length > 1 ? "s" : ""} not loaded (` +
        `${missing.map((t) => t.name).join(", ")}): ${missing[0].reason}`,
    );
  }
  return lines;
}

/** A `plugins.NAME` entry of the policy that no plugin matches is most likely a typo. */
function _unknownPlugins(registry: Registry): string[] {
  const names = new Set<string>();
  for (const s of registry.sources()) {
    if (s.kind !== "plugin" && s.kind !== "package") continue;
    names.add(s.id);
    names.add(s.id.replace(/^(plugin:.*\/|package:)/, ""));
    const own = s.policy.own?.replace(/^plugins\./, "");
    if (own) names.add(own);
    if (s.policy.where.startsWith("plugins.")) names.add(s.policy.where.slice("plugins.".length));
  }
  const { policy } = registry;
  return policy.pluginNames().filter((key) => !names.has(key)).map((key) => {
    const near = closestNames(
      key,
      [...names].filter((n) => !n.includes(":")),
      2,
      Math.max(2, Math.floor(key.length / 3)),
    );
    return `Warning: ${policy.origin(`plugins.${key}`)}: plugins.${key}: no plugin has that name` +
      (near.length ? ` (did you mean: ${near.join(", ")}?)` : "");
  });
}
