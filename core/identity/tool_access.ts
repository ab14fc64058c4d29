/**
 * Which tools one identity may list and call: allow and deny lists of tool
 * names and of toolset names (deny wins; with no allow list, everything not
 * denied). A tool it may not call is not listed to it either.
 *
 * @module
 */
import { closestNames, type IdentityConfig } from "../config/mod.ts";

/** What {@link ToolAccess} needs to know of a tool. */
export interface ToolRef {
  /** The tool's name. */
  name: string;
  /** Its toolset's name. */
  toolset: string;
}

/** One identity's tool lists. */
export class ToolAccess {
  #allowTools?: Set<string>;
  #allowSets?: Set<string>;
  #denyTools: Set<string>;
  #denySets: Set<string>;

  /**
   * The access of `identity` (its `tools` and `toolsets` lists).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ToolAccess } from "./tool_access.ts";
   * const a = new ToolAccess({ tools: { deny: ["RunBashCode"] }, toolsets: { allow: ["files", "shell"], deny: [] } });
   * assert.ok(a.allows({ name: "ReadFile", toolset: "files" }));
   * assert.ok(!a.allows({ name: "RunBashCode", toolset: "shell" }));
   * assert.ok(!a.allows({ name: "Fetch", toolset: "net" }));
   * ```
   */
  constructor(identity: Pick<IdentityConfig, "tools" | "toolsets">) {
    const set = (l?: string[]) => l ? new Set(l) : undefined;
    this.#allowTools = set(identity.tools.allow);
    this.#allowSets = set(identity.toolsets.allow);
    this.#denyTools = new Set(identity.tools.deny);
    this.#denySets = new Set(identity.toolsets.deny);
  }

  /** Whether the identity may list and call `tool`. */
  allows(tool: ToolRef): boolean {
    if (this.#denyTools.has(tool.name) || this.#denySets.has(tool.toolset)) return false;
    if (!this.#allowTools && !this.#allowSets) return true;
    return (this.#allowTools?.has(tool.name) ?? false) ||
      (this.#allowSets?.has(tool.toolset) ?? false);
  }

  /**
   * Whether the identity may reach the toolset `toolset` at all (a hosted
   * server's resources and prompts): not denied, and, where allow lists
   * exist, allowed by name or through one of its tools (`tools`, the
   * toolset's tool names).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ToolAccess } from "./tool_access.ts";
   * const a = new ToolAccess({ tools: { allow: ["read_file"], deny: [] }, toolsets: { deny: ["git"] } });
   * assert.ok(a.reaches("fs", ["read_file", "write_file"]));
   * assert.ok(!a.reaches("memory", ["create_entities"]) && !a.reaches("git", []));
   * ```
   */
  reaches(toolset: string, tools: string[]): boolean {
    if (this.#denySets.has(toolset)) return false;
    if (!this.#allowTools && !this.#allowSets) return true;
    if (this.#allowSets?.has(toolset)) return true;
    return tools.some((t) => this.#allowTools?.has(t) && !this.#denyTools.has(t));
  }

  /** The tools of `tools` it may list, in order. */
  filter<T extends ToolRef>(tools: T[]): T[] {
    return tools.filter((t) => this.allows(t));
  }
}

/**
 * Warnings for names in the identities' lists that match no tool or
 * toolset of `tools`, each with "did you mean" (`identities.alice.tools.allow:
 * no tool "ReadFiel" (did you mean "ReadFile"?)`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unknownAccessNames } from "./tool_access.ts";
 * const w = unknownAccessNames(
 *   { alice: { tools: { allow: ["ReadFiel"], deny: [] }, toolsets: { deny: [] } } },
 *   [{ name: "ReadFile", toolset: "files" }],
 * );
 * assert.match(w[0], /identities\.alice\.tools\.allow: no tool "ReadFiel" \(did you mean "ReadFile"\?\)/);
 * ```
 */
export function unknownAccessNames(
  identities: Record<string, Pick<IdentityConfig, "tools" | "toolsets">>,
  tools: ToolRef[],
): string[] {
  const names = tools.map((t) => t.name);
  const sets = [...new Set(tools.map((t) => t.toolset))];
  const out: string[] = [];
  const check = (where: string, list: string[] | undefined, known: string[], what: string) => {
    for (const n of list ?? []) {
      if (known.includes(n)) continue;
      const near = closestNames(n, known, 1, Math.max(2, Math.floor(n.length / 3)));
      out.push(
        `${where}: no ${what} "${n}"` + (near.length ? ` (did you mean "${near[0]}"?)` : ""),
      );
    }
  };
  for (const [id, c] of Object.entries(identities)) {
    check(`identities.${id}.tools.allow`, c.tools.allow, names, "tool");
    check(`identities.${id}.tools.deny`, c.tools.deny, names, "tool");
    check(`identities.${id}.toolsets.allow`, c.toolsets.allow, sets, "toolset");
    check(`identities.${id}.toolsets.deny`, c.toolsets.deny, sets, "toolset");
  }
  return out;
}
