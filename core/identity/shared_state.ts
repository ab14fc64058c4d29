/**
 * The state that limits callers and that replicas must share for the
 * limits to hold: calls per minute (token buckets), sessions per identity,
 * and revocations. Without `--shared-state` it is this replica's own
 * ({@link LocalState}): N replicas behind a balancer then allow N times a
 * limit. With `--shared-state redis://HOST:PORT` it lives in Redis
 * (./redis_state.ts), and every replica counts against the same buckets,
 * the same sessions and the same revocations.
 *
 * @module
 */
import { type RateGrant, RateLimiter } from "./_rate_limiter.ts";

/** Limits and revocations shared by the replicas of a server (or held by one). */
export interface SharedState {
  /** Where it lives, for messages: `this replica` or the Redis URL (without credentials). */
  readonly where: string;
  /**
   * Take up to `n` calls from `identity`'s bucket of `perMinute`. Rejects
   * when a shared state cannot be reached (the caller refuses: fail closed).
   */
  takeCalls(identity: string, perMinute: number, n: number): Promise<RateGrant>;
  /**
   * Count one more open session of `identity` (named `session`): false when
   * it already has `max` open, on every replica that shares this state.
   */
  openSession(identity: string, session: string, max: number): Promise<boolean>;
  /** A session counted by {@link openSession} ended. */
  closeSession(identity: string, session: string): Promise<void>;
  /**
   * Revoke every credential of `identity` issued before now: its static
   * token and JWTs (by `iat`), on every replica; its work is stopped.
   */
  revoke(identity: string): Promise<void>;
  /** When `identity` was revoked (ms since the epoch), or undefined. */
  revokedAt(identity: string): number | undefined;
  /** Hear each revocation (this replica's and the others'). */
  onRevoked(listener: (identity: string) => void): void;
  /** Why the shared state cannot be used now (requests are refused, 503), or undefined. */
  readonly trouble: string | undefined;
  /** Let go of connections and timers. */
  close(): Promise<void>;
}

/**
 * The state of one replica: its own buckets, sessions and revocations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalState } from "./shared_state.ts";
 * const s = new LocalState();
 * assert.equal((await s.takeCalls("alice", 3, 30)).granted, 3);
 * assert.ok(await s.openSession("alice", "s1", 1));
 * assert.ok(!(await s.openSession("alice", "s2", 1)));
 * await s.closeSession("alice", "s1");
 * assert.ok(await s.openSession("alice", "s2", 1));
 * ```
 */
export class LocalState implements SharedState {
  readonly where = "this replica";
  readonly trouble = undefined;
  #rates = new RateLimiter();
  #sessions = new Map<string, Set<string>>();
  #revoked = new Map<string, number>();
  #listeners: Array<(identity: string) => void> = [];

  takeCalls(identity: string, perMinute: number, n: number): Promise<RateGrant> {
    return Promise.resolve(this.#rates.takeUpTo(identity, perMinute, n));
  }

  openSession(identity: string, session: string, max: number): Promise<boolean> {
    const open = this.#sessions.get(identity) ?? new Set<string>();
    if (open.size >= max) return Promise.resolve(false);
    open.add(session);
    this.#sessions.set(identity, open);
    return Promise.resolve(true);
  }

  closeSession(identity: string, session: string): Promise<void> {
    const open = this.#sessions.get(identity);
    open?.delete(session);
    if (open && !open.size) this.#sessions.delete(identity);
    return Promise.resolve();
  }

  revoke(identity: string): Promise<void> {
    this.#revoked.set(identity, Date.now());
    for (const l of this.#listeners) l(identity);
    return Promise.resolve();
  }

  revokedAt(identity: string): number | undefined {
    return this.#revoked.get(identity);
  }

  onRevoked(listener: (identity: string) => void): void {
    this.#listeners.push(listener);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
