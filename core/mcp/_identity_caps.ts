/**
 * What one identity may hold of a server at once, so that no identity can
 * take the whole server: its sessions, its calls running and waiting, its
 * connections. Each comes from `identities.<name>.limits` when set, else
 * from the server's defaults (`--max-identity-sessions`,
 * `--max-identity-concurrent`, `--max-identity-queue`,
 * `--max-identity-conns`); the instance's own caps (`--max-sessions`,
 * `--max-concurrent`, `--max-queue`, `--max-conns`) stay behind them. The
 * operator (`@operator`) has only the instance's caps unless its own entry
 * sets limits.
 *
 * @module
 */
import { OPERATOR_IDENTITY } from "../config/mod.ts";
import type { ResolvedIdentity } from "../identity/mod.ts";
import type { GateCaller } from "./_call_gate.ts";

/** Default of `--max-identity-sessions`: sessions one identity may hold at once. */
export const DEFAULT_IDENTITY_SESSIONS = 64;
/** Default of `--max-identity-queue`: calls of one identity waiting for a slot. */
export const DEFAULT_IDENTITY_QUEUE = 64;
/** Default of `--max-identity-conns`: connections (requests in flight) of one identity. */
export const DEFAULT_IDENTITY_CONNS = 64;

/** The server's defaults for identities without their own limits. */
export interface IdentityDefaults {
  sessions: number;
  /** Calls running at once (default: half the instance's slots, rounded up). */
  concurrent: number;
  queued: number;
  connections: number;
}

/** What one identity may hold at once. */
export interface IdentityCaps {
  sessions: number;
  connections: number;
  /** Its queue at the call gate. */
  gate: GateCaller;
}

/**
 * The defaults of a server with `slots` calls at once: the given ones, or
 * the built-in ones.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { identityDefaults } from "./_identity_caps.ts";
 * assert.deepEqual(identityDefaults(8), { sessions: 64, concurrent: 4, queued: 64, connections: 64 });
 * ```
 */
export function identityDefaults(
  slots: number,
  given: Partial<IdentityDefaults> = {},
): IdentityDefaults {
  return {
    sessions: given.sessions ?? DEFAULT_IDENTITY_SESSIONS,
    concurrent: given.concurrent ?? Math.max(1, Math.ceil(slots / 2)),
    queued: given.queued ?? DEFAULT_IDENTITY_QUEUE,
    connections: given.connections ?? DEFAULT_IDENTITY_CONNS,
  };
}

/**
 * The caps of `identity`: its own limits, else `defaults` (the operator:
 * else none). A `concurrent` set without `queued` refuses at once beyond
 * it (no queue), as it always did.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { identityCaps, identityDefaults } from "./_identity_caps.ts";
 * const d = identityDefaults(8);
 * const erin = { name: "erin", limits: { concurrent: 1 } } as never;
 * assert.deepEqual(identityCaps(erin, d).gate, {
 *   key: "erin", maxRunning: 1, maxQueued: 0, where: "identities.erin.limits",
 * });
 * const op = identityCaps({ name: "@operator", limits: {} } as never, d);
 * assert.equal(op.gate.maxRunning, Infinity);
 * ```
 */
export function identityCaps(identity: ResolvedIdentity, defaults: IdentityDefaults): IdentityCaps {
  const l = identity.limits ?? {};
  const name = identity.name;
  const own = name === OPERATOR_IDENTITY;
  const pick = (mine: number | undefined, fallback: number) => mine ?? (own ? Infinity : fallback);
  const queued = l.queued ?? (l.concurrent !== undefined ? 0 : own ? Infinity : defaults.queued);
  const where = l.concurrent !== undefined || l.queued !== undefined
    ? `identities.${name}.limits`
    : "--max-identity-concurrent, --max-identity-queue";
  return {
    sessions: pick(l.sessions, defaults.sessions),
    connections: pick(l.connections, defaults.connections),
    gate: {
      key: name,
      maxRunning: pick(l.concurrent, defaults.concurrent),
      maxQueued: queued,
      where,
    },
  };
}
