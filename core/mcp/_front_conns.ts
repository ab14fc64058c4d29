/**
 * The connections held by the HTTP front (./_http_front.ts), and which one
 * gives way when there is no room (node:http's `maxConnections` only drops
 * a connection beyond it, silently, and knows no client address): at most `maxConns` in all and
 * `maxPerClient` from one client address. A new connection beyond either
 * cap first closes the oldest connection (of that address, for the
 * per-address cap) that has not sent a complete request head in its first
 * `graceMs` (default 1 s): it has shown no token, so it cannot be a
 * member's, and it has had time to. Only when there is no such connection
 * is the new one refused. So clients trickling heads
 * from one address (behind a proxy, every client is one address) cannot
 * lock out the clients that send real requests.
 *
 * @module
 */

/** Where a connection is in its one request. */
export type ConnPhase = "head" | "body" | "open";

interface _Held {
  who: string;
  phase: ConnPhase;
  close: () => void;
  /** `performance.now()` when it was accepted. */
  since: number;
}

/** The answer of {@link FrontConns.admit}. */
export type ConnAdmission =
  | { ok: true; id: number }
  | { ok: false; status: 429 | 503; message: string };

/**
 * The open connections of one front.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FrontConns } from "./_front_conns.ts";
 * const conns = new FrontConns(2, 2, 0);
 * let closed = 0;
 * const a = conns.admit("10.0.0.1", () => closed++);
 * const b = conns.admit("10.0.0.1", () => closed++);
 * assert.ok(a.ok && b.ok);
 * conns.phase(b.id, "open"); // b sent its head
 * const c = conns.admit("10.0.0.1", () => closed++);
 * assert.ok(c.ok && closed === 1); // a (no head yet) gave way
 * conns.phase(c.id, "open");
 * assert.equal(conns.admit("10.0.0.1", () => {}).ok, false); // both sent heads: refused
 * ```
 */
export class FrontConns {
  readonly #held = new Map<number, _Held>();
  readonly #perClient = new Map<string, number>();
  #next = 1;

  constructor(
    readonly maxConns: number,
    readonly maxPerClient: number,
    readonly graceMs = 1_000,
  ) {}

  /** Connections held now. */
  get size(): number {
    return this.#held.size;
  }

  /**
   * Room for a connection from `who` (making it by closing a headless one
   * when needed); `close` ends it if it must give way later.
   */
  admit(who: string, close: () => void): ConnAdmission {
    if (this.#held.size >= this.maxConns && !this.#evict(undefined)) {
      return {
        ok: false,
        status: 503,
        message:
          `The server is full: ${this.maxConns} connections at once (--max-conns); retry later`,
      };
    }
    if ((this.#perClient.get(who) ?? 0) >= this.maxPerClient && !this.#evict(who)) {
      return {
        ok: false,
        status: 429,
        message: `Too many connections from ${who}: ${this.maxPerClient} at once ` +
          "(--max-client-conns); retry later",
      };
    }
    const id = this.#next++;
    this.#held.set(id, { who, phase: "head", close, since: performance.now() });
    this.#perClient.set(who, (this.#perClient.get(who) ?? 0) + 1);
    return { ok: true, id };
  }

  /**
   * Connection `id` moved on: its head arrived (`body`), its body too
   * (`open`), or, kept alive, it waits for its next head (`head`: from now
   * on it may give way as a new connection may).
   */
  phase(id: number, phase: ConnPhase): void {
    const h = this.#held.get(id);
    if (!h) return;
    h.phase = phase;
    if (phase !== "head") return;
    // Oldest first: it goes to the end of the line, as if it had just come.
    h.since = performance.now();
    this.#held.delete(id);
    this.#held.set(id, h);
  }

  /** Connection `id` ended. */
  release(id: number): void {
    const h = this.#held.get(id);
    if (!h) return;
    this.#held.delete(id);
    const left = (this.#perClient.get(h.who) ?? 1) - 1;
    if (left > 0) this.#perClient.set(h.who, left);
    else this.#perClient.delete(h.who);
  }

  /**
   * Close the oldest connection still without a head after its grace (of
   * `who`, if given); false if none.
   */
  #evict(who: string | undefined): boolean {
    const now = performance.now();
    for (const [id, h] of this.#held) {
      if (h.phase !== "head" || (who !== undefined && h.who !== who)) continue;
      if (now - h.since < this.graceMs) break; // the rest are younger still
      this.release(id);
      h.close();
      return true;
    }
    return false;
  }
}
