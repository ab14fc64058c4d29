/**
 * Every grant path there is: no sandbox's write layer may apply a link at
 * or above one (core/layers/change_rules.ts), so that a tool with a wide
 * write grant cannot swap a narrower sandbox's folder, or a folder above it,
 * for a symlink. And the folders of the plugin sources, which the trust
 * base protects.
 *
 * @module
 */
import { pluginRoot, type Policy, type TrustedPath } from "../config/mod.ts";
import type { ToolsetSource } from "./catalog.ts";

/**
 * The read and write paths of every toolset and plugin entry of the policy
 * (`plugins.default` too) and of every registered source, and the workspace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "../config/mod.ts";
 * import { grantPaths } from "./grant_paths.ts";
 * const policy = parsePolicy('{"plugins": {"p": {"write": ["/w/out"]}}}', "p.json", "/w");
 * assert.deepEqual(grantPaths(policy, [], "/w"), ["/w", "/w/out"]);
 * ```
 */
export function grantPaths(policy: Policy, sources: ToolsetSource[], workspace: string): string[] {
  const entries = [
    ...policy.toolsetNames().map((n) => policy.toolset(n)),
    ...[...policy.pluginNames(), "default"].map((n) => policy.plugin(n)),
    ...sources.map((s) => s.policy),
  ];
  const paths = new Set([workspace]);
  for (const e of entries) for (const p of [...e.read, ...e.write]) paths.add(p);
  return [...paths];
}

/** The folders of plugin and package sources: part of the trust base. */
export function pluginRoots(sources: ToolsetSource[]): TrustedPath[] {
  const roots = new Set<string>();
  for (const s of sources) {
    if (s.kind === "builtin") continue;
    for (const m of s.modules) if (m.startsWith("/")) roots.add(pluginRoot(m));
  }
  return [...roots].map((path) => ({ path, what: "a plugin directory" }));
}
