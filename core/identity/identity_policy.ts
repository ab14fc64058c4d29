/**
 * What each identity gets: its tool access, its workspace and its limits,
 * from `identities` of corral.json. With no `identities`, every identity
 * may use every tool. With some, an identity that has no entry is refused
 * (fail closed), except the operator (`@operator`, the server's own token)
 * which keeps every tool and the server's workspace unless
 * `identities["@operator"]` says otherwise. `default` is an ordinary name. Workspaces are never shared by
 * accident: an identity without one gets `auth.workspaces_dir/<name>`, and
 * a config where a non-default identity would fall back to the server's
 * workspace is refused at start.
 *
 * @module
 */
import { join } from "node:path";
import { type IdentityConfig, OPERATOR_IDENTITY } from "../config/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { ToolAccess } from "./tool_access.ts";

/** One identity's policy, ready to use. */
export interface ResolvedIdentity {
  /** Its name (the principal of its sessions and calls). */
  name: string;
  /** The tools it may list and call. */
  access: ToolAccess;
  /** Its workspace (absolute). */
  workspace: string;
  /** Its limits (absent: not limited per identity). */
  limits: IdentityConfig["limits"];
  /** Its sessions share one principal's sandboxes (`identities.<name>.share_sandboxes`). */
  shareSandboxes?: boolean;
}

/** The per-identity policy of one server. */
export class IdentityPolicy {
  #entries: Record<string, IdentityConfig>;
  #serverWorkspace: string;
  #workspacesDir: string | null;
  #cache = new Map<string, ResolvedIdentity>();

  /**
   * The policy of `identities` for a server whose own workspace is
   * `serverWorkspace`. Throws a {@link ConfigError} when an identity would
   * get the server's workspace without naming it.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { IdentityPolicy } from "./identity_policy.ts";
   * const p = new IdentityPolicy({}, { serverWorkspace: "/srv/ws", workspacesDir: "/srv/people" });
   * assert.equal(p.resolve("alice").workspace, "/srv/people/alice");
   * assert.equal(p.resolve("@operator").workspace, "/srv/ws");
   * assert.equal(p.resolve("default").workspace, "/srv/people/default");
   * ```
   */
  constructor(
    identities: Record<string, IdentityConfig>,
    options: { serverWorkspace: string; workspacesDir: string | null },
  ) {
    this.#entries = identities;
    this.#serverWorkspace = options.serverWorkspace;
    this.#workspacesDir = options.workspacesDir;
    const homeless = Object.values(identities).filter((i) =>
      !i.workspace && i.name !== OPERATOR_IDENTITY
    );
    if (homeless.length && !this.#workspacesDir) {
      throw new ConfigError(
        `identities ${homeless.map((i) => `"${i.name}"`).join(", ")} name no workspace: set ` +
          `identities.<name>.workspace, or auth.workspaces_dir for one folder per identity`,
      );
    }
  }

  /**
   * The workspaces of the configured identities other than the server's
   * own, each once (absolute, in config order): each needs a registry of its own.
   */
  workspaces(): string[] {
    const out = new Set<string>();
    for (const name of Object.keys(this.#entries)) {
      const ws = this.resolve(name).workspace;
      if (ws !== this.#serverWorkspace) out.add(ws);
    }
    return [...out];
  }

  /** The server's own workspace. */
  get serverWorkspace(): string {
    return this.#serverWorkspace;
  }

  /** Whether `identities` has any entry. */
  get configured(): boolean {
    return Object.keys(this.#entries).length > 0;
  }

  /**
   * The policy of `name`; a {@link IdentityRefusedError} when `identities`
   * is configured and has no entry for it.
   */
  resolve(name: string): ResolvedIdentity {
    const hit = this.#cache.get(name);
    if (hit) return hit;
    const entry = Object.hasOwn(this.#entries, name) ? this.#entries[name] : undefined;
    if (!entry && this.configured && name !== OPERATOR_IDENTITY) {
      throw new IdentityRefusedError(
        `Forbidden: the identity "${name}" has no entry in corral.json "identities"`,
      );
    }
    const workspace = entry?.workspace ??
      (name !== OPERATOR_IDENTITY && this.#workspacesDir
        ? join(this.#workspacesDir, name)
        : this.#serverWorkspace);
    const resolved: ResolvedIdentity = {
      name,
      access: new ToolAccess(entry ?? { tools: { deny: [] }, toolsets: { deny: [] } }),
      workspace,
      limits: entry?.limits ?? {},
      shareSandboxes: entry?.shareSandboxes ?? false,
    };
    if (entry || this.#cache.size < 10_000) this.#cache.set(name, resolved);
    return resolved;
  }
}

/**
 * Warnings about `identities` for an operator upgrading: `default` used to
 * be the server's own token and is now an ordinary name a token or JWT may
 * claim (the operator is `@operator`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { operatorNotes } from "./identity_policy.ts";
 * assert.match(operatorNotes({ default: {} })[0], /identities\["@operator"\]/);
 * assert.deepEqual(operatorNotes({ alice: {} }), []);
 * ```
 */
export function operatorNotes(identities: Record<string, unknown>): string[] {
  if (!Object.hasOwn(identities, "default")) return [];
  return [
    'identities.default: "default" is an ordinary identity that a token or a JWT may claim, ' +
    `not the server's own token: that is the operator, configured as identities["${OPERATOR_IDENTITY}"]`,
  ];
}

/** An authenticated identity that the policy does not admit (HTTP 403). */
export class IdentityRefusedError extends Error {
  /** Create the error. */
  constructor(message: string) {
    super(message);
    this.name = "IdentityRefusedError";
  }
}
