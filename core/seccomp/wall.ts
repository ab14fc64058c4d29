/**
 * The second wall of one registry: for each sandbox's policy, whether its
 * jailed processes run behind the syscall filter (`on`, with the syscalls
 * the policy grants), without it by the operator's choice (`off`), or
 * cannot start because it cannot be had (`missing`, with the cause). Every
 * filter a policy names is made when the registry opens, so a sandbox's
 * start asks nothing slow.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { type JailFilter, jailFilter, type SecondWallOptions } from "./second_wall.ts";

/** What the second wall reads of a sandbox's policy (core/config/policy.ts `SandboxPolicy`). */
export interface WallPolicy {
  /** `off`: the operator's explicit opt-out. */
  seccomp?: "required" | "off";
  /** Refused syscalls granted by name. */
  allow_syscalls?: readonly string[];
  /** Where the entry is (`toolsets.system`) and its file, for messages. */
  where: string;
  file?: string;
}

/** How the reason of a sandbox refused for want of its filter begins. */
export const WALL_MISSING = "needs the jail's second wall";

/** A sandbox's second wall. */
export type WallStatus =
  | { state: "on"; filter: JailFilter }
  | { state: "off" }
  | { state: "missing"; why: string };

/**
 * The second wall of a registry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecondWall } from "./wall.ts";
 * const none = SecondWall.none("no working bwrap");
 * assert.equal(none.status({ where: "toolsets.system" }).state, "missing");
 * assert.equal(none.status({ where: "toolsets.system", seccomp: "off" }).state, "off");
 * ```
 */
export class SecondWall {
  readonly #filters: Map<string, JailFilter | Error>;
  readonly #missing?: string;

  private constructor(filters: Map<string, JailFilter | Error>, missing?: string) {
    this.#filters = filters;
    this.#missing = missing;
  }

  /** No filter at all, for `why` (no namespace to load one in). */
  static none(why: string): SecondWall {
    return new SecondWall(new Map(), why);
  }

  /**
   * The filters for no exception and for each list of `grants`, made or
   * found now (./second_wall.ts); one that cannot be had is kept as its cause.
   */
  static async open(
    grants: readonly (readonly string[])[],
    options: SecondWallOptions,
  ): Promise<SecondWall> {
    const sets = new Map([[_key([]), [] as string[]]]);
    for (const g of grants) sets.set(_key(g), [...new Set(g)].sort());
    const filters = new Map<string, JailFilter | Error>();
    await Promise.all([...sets].map(async ([key, except]) => {
      try {
        filters.set(key, await jailFilter(except, options));
      } catch (err) {
        filters.set(key, err as Error);
      }
    }));
    return new SecondWall(filters);
  }

  /** The second wall of a sandbox with policy `p`. */
  status(p: WallPolicy): WallStatus {
    if (p.seccomp === "off") return { state: "off" };
    const found = this.#missing === undefined
      ? this.#filters.get(_key(p.allow_syscalls ?? []))
      : undefined;
    if (found && !(found instanceof Error)) return { state: "on", filter: found };
    const cause = this.#missing ?? (found as Error | undefined)?.message ??
      "its filter was not made when corral started";
    return {
      state: "missing",
      why: `${WALL_MISSING}, a syscall filter, but it cannot be had: ${cause}; ` +
        `or opt out explicitly with "seccomp": "off" in ${p.where} of ` +
        `${p.file ?? "permissions.json"}`,
    };
  }

  /** Why the filter without exceptions is missing, or undefined when it is there. */
  get missing(): string | undefined {
    const base = this.#filters.get(_key([]));
    return this.#missing ?? (base instanceof Error ? base.message : undefined);
  }
}

/**
 * Where corral keeps its compiled filters: `seccomp` beside its code store
 * (`codeStoreDir()` of core/config/install_dir.ts: its cache folder, or its
 * config directory without a cache), inside the trust base.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { filtersDir } from "./wall.ts";
 * assert.equal(filtersDir("/root/.cache/corral/pinned"), "/root/.cache/corral/seccomp");
 * ```
 */
export function filtersDir(codeStore: string): string {
  return join(dirname(codeStore), "seccomp");
}

function _key(except: readonly string[]): string {
  return [...new Set(except)].sort().join(",");
}
