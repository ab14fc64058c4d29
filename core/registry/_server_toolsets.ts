/**
 * Hosted MCP servers as toolsets of the catalog: what one registers, from
 * its approved records (core/hosted/), nothing started. A server's tools
 * never take a built-in's name nor another toolset's (they are prefixed
 * with `<server>_`), and without the namespace they do not load (nor, in a
 * compiled corral with no Deno on PATH, an npm server's).
 *
 * @module
 */
import type { SandboxPolicy, ServerEntry } from "../config/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { type HostedServers, npmDenoMissing } from "../hosted/mod.ts";
import type { ModuleMeta } from "../sandbox/mod.ts";
import type { Catalog, ToolsetSource } from "./catalog.ts";

/**
 * The module metas of server `entry` for the catalog, after removing what
 * it registered before. Throws a {@link ConfigError} when a toolset of its
 * name exists.
 */
export function serverMetas(
  catalog: Catalog,
  hosted: HostedServers,
  source: ToolsetSource,
  entry: ServerEntry,
  reserved: Map<string, string>,
): ModuleMeta[] {
  if (catalog.sources().some((s) => s.id === entry.name && s.kind !== "server")) {
    throw new ConfigError(
      `server "${entry.name}": a toolset of that name exists; rename the server in corral.json`,
    );
  }
  catalog.remove(entry.name);
  // Fail closed: a hosted server always runs in the jail (the namespace and its syscall
  // filter), whatever it holds; a compiled corral needs a deno on PATH for npm servers.
  const missing = source.policy.jail === "off"
    ? npmDenoMissing(entry)
    : catalog.confine(source, { read: ["/"], write: [], run: [], net: [] }).missing ??
      npmDenoMissing(entry);
  const taken = (n: string) =>
    reserved.has(n) || (catalog.entry(n)?.source ?? source).id !== entry.name;
  return hosted.metas(entry, source.policy, taken, missing);
}

/** The toolset source of a server (its tools run through `HostedServers.call`). */
export function serverSource(entry: ServerEntry, policy: SandboxPolicy): ToolsetSource {
  return { id: entry.name, kind: "server", modules: [`server:${entry.name}`], policy };
}
