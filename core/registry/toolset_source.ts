/**
 * A toolset as the registry knows it before discovery: where it comes from
 * (built in, a plugin, a package, a hosted server), its modules, the policy
 * it runs under and its config section. The catalog (./catalog.ts) decides
 * its tools from it; its wording (./_catalog_text.ts) and its confinement
 * (./_confine.ts) read it.
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";
import type { Pins } from "../sandbox/mod.ts";

/** Where a toolset comes from (`server`: a hosted MCP server, core/hosted/). */
export type SourceKind = "builtin" | "plugin" | "package" | "server";

/** A toolset to load: its modules, its policy and its config section. */
export interface ToolsetSource {
  /** `files`, `plugin:<dir>/<stem>`, `package:<specifier>`. */
  id: string;
  kind: SourceKind;
  /** Module files (absolute paths) or specifiers. */
  modules: string[];
  policy: SandboxPolicy;
  /** The plugin's own section of the config, passed to `TOOL_SETUP`. */
  config?: unknown;
  /** Hosts its remote modules are imported from (cached code only). */
  imports?: string[];
  /** Its module files as discovery checked them, with their hashes (set by discovery). */
  pins?: Pins;
}
