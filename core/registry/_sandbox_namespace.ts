/**
 * What a toolset's process sandbox gets besides its grant when it runs in
 * the namespace (core/jail/namespace.ts): bwrap, its syscall filter
 * (core/seccomp/), the trust base to keep
 * read-only and the secrets to hide (with corral's own and the plugin
 * folders), and every grant path (no link is applied at or above one,
 * core/layers/change_rules.ts); and the refusal of a write grant that
 * overlaps the trust base.
 *
 * @module
 */
import { checkWrites, type Policy, type TrustedPath } from "../config/mod.ts";
import type { HostPrivileges, SandboxOptions } from "../sandbox/mod.ts";
import type { Grant } from "../tool/mod.ts";
import type { Catalog, ToolsetSource } from "./catalog.ts";
import { grantPaths, pluginRoots } from "./grant_paths.ts";

/**
 * The namespace of a source's sandboxes with `grant`, or undefined when
 * they run without one (a worker, an opt-out, no bwrap).
 */
export function sandboxNamespace(
  catalog: Catalog,
  trustBase: TrustedPath[],
  bwrap: string | undefined,
  policy: Policy,
  workspace: string,
  folders: { runDir?: string } = {},
): (source: ToolsetSource, grant: Grant) => SandboxOptions["namespace"] {
  return (source, grant) => {
    if (source.policy.isolation !== "process") return undefined;
    const jail = catalog.confine(source, grant);
    if (jail.status !== "bwrap" || !bwrap) return undefined;
    const trusted = [...trustBase, ...pluginRoots(catalog.sources())];
    return {
      bwrap,
      // The second wall (core/seccomp/): absent only where the operator opted out.
      ...(jail.wall?.state === "on" ? { seccomp: jail.wall.filter } : {}),
      protect: trusted.map((t) => t.path),
      hide: trusted.filter((t) => t.secret).map((t) => t.path),
      trust: trusted.map((t) => ({ path: t.path, what: t.what })),
      grantPaths: grantPaths(policy, catalog.sources(), workspace),
      ...folders,
    };
  };
}

/**
 * Refuse a source whose write grant overlaps the trust base `trusted`
 * (core/config/trust_base.ts): inside it always, holding it when its
 * sandbox runs without the namespace. Throws a ConfigError naming both.
 */
export function checkSourceTrust(
  source: ToolsetSource,
  trusted: TrustedPath[],
  host: HostPrivileges,
  catalog: Catalog,
): void {
  const write = source.policy.write.filter((p) =>
    host.letters.includes("w") && host.denoGranted("write", p)
  );
  // In a worker fallback no tool that writes loads (the catalog refuses it): nothing to mask.
  if (!write.length || source.policy.fallback) return;
  // A sandbox that cannot run at all (no bwrap, no syscall filter) writes nothing: its tools
  // do not load, and say why.
  const jail = catalog.confine(source, { read: [], write, run: [], net: [] });
  const masked = source.policy.isolation === "process" &&
    (jail.status === "bwrap" || !!jail.missing);
  checkWrites(write, source.policy.where, trusted, masked);
}
