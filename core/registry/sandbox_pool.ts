/**
 * The call sandboxes of a registry, one per principal, toolset and grant.
 *
 * A principal is whoever a call is made for: one MCP session (stdio, or
 * HTTP with its session id), a stateless HTTP caller (by its bearer token),
 * or the command line. Its key is an opaque string. Two principals never
 * share a sandbox process, so nothing one leaves running (a background
 * process, a hostile plugin's state) sees another's calls.
 *
 * Each sandbox lives from its principal's first call of that toolset until
 * the first of: its principal ends ({@link SandboxPool.closePrincipal}: a
 * session closed, deleted or expired), it stays unused for the idle time,
 * the pool is full and it is the least recently used one not running a
 * call, or the registry closes. Closing a sandbox kills everything it
 * started (its cgroup, core/jail/limits.ts).
 *
 * @module
 */
import type { Sandbox } from "../sandbox/mod.ts";
import { markSandbox, runningSandboxes, sink as telemetry } from "../base/mod.ts";
import type { Catalog, ToolInfo, ToolsetSource } from "./catalog.ts";

/** The principal of calls that name none: the command line, the library. */
export const LOCAL_PRINCIPAL = "local";
/** Default of {@link SandboxPoolLimits.max}: live call sandboxes at once. */
export const DEFAULT_MAX_SANDBOXES = 64;
/** Default of {@link SandboxPoolLimits.idleMs}: 15 minutes, as an HTTP session's. */
export const DEFAULT_SANDBOX_IDLE_MS = 15 * 60_000;

/** How many sandboxes may live, and how long an unused one is kept. */
export interface SandboxPoolLimits {
  /** Live sandboxes at once, every principal together. */
  max?: number;
  /** A sandbox unused this long is closed. */
  idleMs?: number;
}

interface _Entry {
  principal: string;
  key: string;
  sandbox: Sandbox;
  /** Calls holding it now (never closed for room or idleness while > 0). */
  busy: number;
  /** `performance.now()` of its last release. */
  used: number;
}

/** A sandbox held for one call; `release()` when the call is over. */
export interface HeldSandbox {
  sandbox: Sandbox;
  release(): void;
}

/**
 * The sandboxes of every principal, bounded and reaped when idle.
 *
 * @example
 * ```ts ignore
 * const pool = new SandboxPool({ max: 8 });
 * const held = pool.acquire("session-1", "files|r|", () => new Sandbox(options));
 * if (typeof held !== "string") held.release();
 * await pool.closePrincipal("session-1");
 * ```
 */
export class SandboxPool {
  #entries = new Map<string, _Entry>();
  #max = DEFAULT_MAX_SANDBOXES;
  #idleMs = DEFAULT_SANDBOX_IDLE_MS;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(limits: SandboxPoolLimits = {}) {
    this.setLimits(limits);
  }

  /** Change the limits (e.g. `corral mcp --session-idle`). */
  setLimits(limits: SandboxPoolLimits): void {
    if (limits.max !== undefined) {
      if (!Number.isInteger(limits.max) || limits.max < 1) {
        throw new RangeError(`the sandbox limit must be a positive integer, got ${limits.max}`);
      }
      this.#max = limits.max;
    }
    if (limits.idleMs !== undefined) {
      if (!(limits.idleMs > 0)) {
        throw new RangeError(`the sandbox idle time must be positive, got ${limits.idleMs} ms`);
      }
      this.#idleMs = limits.idleMs;
      this.#stopReaper();
      if (this.#entries.size) this.#startReaper();
    }
  }

  /** Live sandboxes now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The sandbox of `principal` and `key` (made by `make` when there is
   * none), held until `release()`. When the pool is full, the least
   * recently used sandbox that runs no call is closed first; when every
   * one runs a call, returns why no sandbox can be had.
   */
  acquire(principal: string, key: string, make: () => Sandbox): HeldSandbox | string {
    const id = _id(principal, key);
    let entry = this.#entries.get(id);
    if (!entry) {
      if (this.#entries.size >= this.#max && !this.#evictOne()) {
        return `${this.#max} sandboxes are running calls (the limit of live sandboxes); ` +
          "try again when one ends";
      }
      entry = { principal, key, sandbox: make(), busy: 0, used: performance.now() };
      this.#entries.set(id, entry);
      telemetry.sandboxes(1); // corral_sandboxes_live
      runningSandboxes.add(entry.sandbox); // its memory: corral_sandbox_rss_bytes
      this.#startReaper();
      markSandbox("start"); // on the call's span, when traced
    } else markSandbox("reuse");
    entry.busy++;
    const held = entry;
    let released = false;
    return {
      sandbox: held.sandbox,
      release: () => {
        if (released) return;
        released = true;
        held.busy--;
        held.used = performance.now();
      },
    };
  }

  /** Close every sandbox of `principal`, running calls or not (its session ended). */
  async closePrincipal(principal: string): Promise<void> {
    await this.#closeWhere((e) => e.principal === principal);
  }

  /** Close the sandboxes whose key passes `test`, for every principal. */
  async closeKeys(test: (key: string) => boolean): Promise<void> {
    await this.#closeWhere((e) => test(e.key));
  }

  /** Close every sandbox. */
  async close(): Promise<void> {
    await this.#closeWhere(() => true);
  }

  /** Close sandboxes unused for the idle time (called by the reaper). */
  reap(now = performance.now()): Promise<void> {
    return this.#closeWhere((e) => e.busy === 0 && now - e.used >= this.#idleMs);
  }

  async #closeWhere(test: (e: _Entry) => boolean): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [id, e] of this.#entries) {
      if (!test(e)) continue;
      this.#entries.delete(id);
      telemetry.sandboxes(-1);
      runningSandboxes.delete(e.sandbox);
      closing.push(e.sandbox.close());
    }
    if (this.#entries.size === 0) this.#stopReaper();
    await Promise.all(closing);
  }

  /** Close the least recently used idle sandbox; false when every one runs a call. */
  #evictOne(): boolean {
    let oldest: [string, _Entry] | undefined;
    for (const pair of this.#entries) {
      if (pair[1].busy === 0 && (!oldest || pair[1].used < oldest[1].used)) oldest = pair;
    }
    if (!oldest) return false;
    this.#entries.delete(oldest[0]);
    telemetry.sandboxes(-1);
    runningSandboxes.delete(oldest[1].sandbox);
    void oldest[1].sandbox.close();
    return true;
  }

  #startReaper(): void {
    if (this.#timer !== undefined) return;
    const every = Math.max(250, Math.min(this.#idleMs / 4, 30_000));
    this.#timer = setInterval(() => void this.reap(), every);
    Deno.unrefTimer(this.#timer);
  }

  #stopReaper(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** The map key: a principal is any string, so the two parts cannot run together. */
function _id(principal: string, key: string): string {
  return JSON.stringify([principal, key]);
}

/** Tools share a sandbox only when they hold exactly the same grant: the key of that grant. */
export function sandboxKey(source: ToolsetSource, info: ToolInfo): string {
  return `${source.id}|${info.permissions}|${info.grant.run.join(",")}`;
}

/** The module files of the tools that share `info`'s sandbox. */
export function sandboxModules(catalog: Catalog, source: ToolsetSource, info: ToolInfo): string[] {
  const key = sandboxKey(source, info);
  const modules = catalog.entries()
    .filter((e) => e.source.id === source.id && sandboxKey(e.source, e.info) === key)
    .map((e) => e.module);
  return [...new Set(modules)].filter((m) => m.startsWith("/"));
}
