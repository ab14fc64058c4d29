/**
 * How many tool calls run at once in one corral instance, and how many may
 * wait: every MCP session (and every stateless request) of an instance
 * shares one gate. Each caller (an identity) waits in a queue of its own,
 * and the queues are served round robin, so one busy caller delays another
 * by at most its turn, never by its whole backlog. A caller may also hold
 * at most its own number of running and waiting calls
 * ({@link GateCaller}); the instance's caps stay behind them. Beyond a
 * queue a call is refused at once (HTTP 429 with `Retry-After` in
 * stateless mode, a tool error in a session).
 *
 * @module
 */

/** Default slots: calls running at once in an instance. */
export const DEFAULT_MAX_CONCURRENT = 8;
/** Default queue: calls waiting for a slot. */
export const DEFAULT_MAX_QUEUE = 256;

/** A caller at the gate: its queue's key and its own caps. */
export interface GateCaller {
  /** Whose queue (an identity's name). */
  key: string;
  /** Its calls running at once, at most. */
  maxRunning: number;
  /** Its calls waiting, at most (0: a call beyond `maxRunning` is refused at once). */
  maxQueued: number;
  /** Says where its caps come from, for the refusal (`identities.alice.limits`). */
  where?: string;
}

const _ANYONE: GateCaller = { key: "", maxRunning: Infinity, maxQueued: Infinity };

interface _Waiter {
  caller: GateCaller;
  wake: () => void;
}

/**
 * A counting gate with a bounded queue per caller, served round robin.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CallGate } from "./_call_gate.ts";
 * const gate = new CallGate(1, 4);
 * const alice = { key: "alice", maxRunning: 1, maxQueued: 4 };
 * const bob = { key: "bob", maxRunning: 1, maxQueued: 4 };
 * const first = (await gate.acquire(undefined, alice))!;
 * const order: string[] = [];
 * for (const who of [alice, alice, alice, bob]) {
 *   gate.acquire(undefined, who).then((release) => (order.push(who.key), release!()));
 * }
 * first();
 * await new Promise((r) => setTimeout(r, 10));
 * assert.deepEqual(order, ["alice", "bob", "alice", "alice"]); // bob's turn comes second
 * ```
 */
export class CallGate {
  /** Calls running now. */
  running = 0;
  #waiting = 0;
  readonly #queues = new Map<string, _Waiter[]>();
  /** Keys with waiting calls, in turn order; `#turn` is the next to serve. */
  #ring: string[] = [];
  #turn = 0;
  readonly #runningBy = new Map<string, number>();
  readonly #roomWaiters = new Set<() => void>();

  constructor(readonly slots: number, readonly queue: number) {}

  /** Calls waiting now. */
  get waiting(): number {
    return this.#waiting;
  }

  /** No slot and no room in the queue: a new call would be refused. */
  get full(): boolean {
    return this.running >= this.slots && this.#waiting >= this.queue;
  }

  /**
   * `caller` has no room of its own: every call it may run is running and
   * its queue is full (a request of calls can be refused whole, cheaply).
   */
  fullFor(caller: GateCaller): boolean {
    const key = caller.key;
    return this.runningOf(key) >= caller.maxRunning && this.waitingOf(key) >= caller.maxQueued;
  }

  /**
   * Resolves once `caller` has room (see {@link fullFor}), or to false after
   * `ms`: a caller whose queue is full waits here before it is refused, so a
   * flood of requests is slowed to what its calls free, not answered as
   * fast as it comes.
   */
  roomFor(caller: GateCaller, ms: number): Promise<boolean> {
    if (!this.fullFor(caller)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (this.fullFor(caller)) return;
        clearTimeout(timer);
        this.#roomWaiters.delete(check);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#roomWaiters.delete(check);
        resolve(false);
      }, ms);
      this.#roomWaiters.add(check);
    });
  }

  /** Calls of `key` running now. */
  runningOf(key: string): number {
    return this.#runningBy.get(key) ?? 0;
  }

  /** Calls of `key` waiting now. */
  waitingOf(key: string): number {
    return this.#queues.get(key)?.length ?? 0;
  }

  /**
   * A slot for `caller`: resolves to its release function, or to undefined
   * when its queue or the instance's is full (or `signal` aborts while
   * waiting; {@link refusal} says which).
   */
  acquire(signal?: AbortSignal, caller: GateCaller = _ANYONE): Promise<(() => void) | undefined> {
    const key = caller.key;
    if (
      this.running < this.slots && this.runningOf(key) < caller.maxRunning &&
      this.waitingOf(key) === 0
    ) {
      return Promise.resolve(this.#take(key));
    }
    if (
      this.#waiting >= this.queue || this.waitingOf(key) >= caller.maxQueued || signal?.aborted
    ) {
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const waiter: _Waiter = {
        caller,
        wake: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#take(key));
        },
      };
      const onAbort = () => {
        this.#remove(waiter);
        resolve(undefined);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const q = this.#queues.get(key);
      if (q) q.push(waiter);
      else {
        this.#queues.set(key, [waiter]);
        this.#ring.push(key);
      }
      this.#waiting++;
    });
  }

  /** Why `caller`'s call was refused now: its own queue, or the instance's. */
  refusal(caller: GateCaller = _ANYONE): string {
    const key = caller.key;
    if (caller.maxQueued !== Infinity && this.waitingOf(key) >= caller.maxQueued) {
      return `"${key}" already has ${this.runningOf(key)} calls running and ` +
        `${this.waitingOf(key)} waiting (${caller.where ?? "its limits"}: ${caller.maxRunning} ` +
        `at once, ${caller.maxQueued} waiting); try again when one ends`;
    }
    return `too busy: ${this.running} calls running and ${this.#waiting} waiting ` +
      `(--max-concurrent ${this.slots}, --max-queue ${this.queue}); try again shortly`;
  }

  #take(key: string): () => void {
    this.running++;
    this.#runningBy.set(key, this.runningOf(key) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      const left = this.runningOf(key) - 1;
      if (left > 0) this.#runningBy.set(key, left);
      else this.#runningBy.delete(key);
      this.#serve();
      for (const check of [...this.#roomWaiters]) check();
    };
  }

  /** Hand free slots to waiting calls, one caller's turn after another. */
  #serve(): void {
    while (this.running < this.slots && this.#ring.length) {
      let found = -1;
      for (let i = 0; i < this.#ring.length; i++) {
        const at = (this.#turn + i) % this.#ring.length;
        const head = this.#queues.get(this.#ring[at])![0];
        if (this.runningOf(head.caller.key) < head.caller.maxRunning) {
          found = at;
          break;
        }
      }
      if (found < 0) return; // every waiting caller is at its own cap
      const key = this.#ring[found];
      const q = this.#queues.get(key)!;
      const waiter = q.shift()!;
      this.#waiting--;
      if (q.length) this.#turn = (found + 1) % this.#ring.length;
      else {
        this.#queues.delete(key);
        this.#ring.splice(found, 1);
        this.#turn = this.#ring.length ? found % this.#ring.length : 0;
      }
      waiter.wake();
    }
  }

  #remove(waiter: _Waiter): void {
    const key = waiter.caller.key;
    const q = this.#queues.get(key);
    const i = q?.indexOf(waiter) ?? -1;
    if (!q || i < 0) return;
    q.splice(i, 1);
    this.#waiting--;
    if (!q.length) {
      this.#queues.delete(key);
      const at = this.#ring.indexOf(key);
      this.#ring.splice(at, 1);
      if (this.#turn > at) this.#turn--;
      if (this.#turn >= this.#ring.length) this.#turn = 0;
    }
  }
}
