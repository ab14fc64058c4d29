/**
 * The shared state of replicas in Redis (`--shared-state redis://HOST:PORT`,
 * or `shared_state` in corral.json), through the official client
 * (`@redis/client`): calls per minute as one token bucket per identity
 * (a Lua script on Redis's own clock, so replicas' clocks do not matter),
 * open sessions per identity as a sorted set of expiring members (a replica
 * that dies leaves nothing behind past {@link SESSION_TTL_MS}), and
 * revocations as a hash that every replica loads and follows by pub/sub.
 *
 * Fail closed: a state that cannot be reached at start is a
 * {@link ConfigError} (corral does not serve); later, while the connection
 * is down or a command does not answer within 2 s, requests that need it
 * are refused (`trouble`), never let through unlimited.
 *
 * @module
 */
import { createClient } from "@redis/client";
import { ConfigError } from "../tool/mod.ts";
import type { RateGrant } from "./_rate_limiter.ts";
import type { SharedState } from "./shared_state.ts";

/** How long a session counts without its replica renewing it (a dead replica's sessions go). */
export const SESSION_TTL_MS = 30_000;
const _RENEW_MS = 10_000;
const _COMMAND_MS = 2_000;
const _PREFIX = "corral:";
const _CHANNEL = `${_PREFIX}revocations`;

/** A token bucket of `ARGV[1]` per minute; takes up to `ARGV[2]`; Redis's clock. */
const _BUCKET = `
local rate = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or rate
local at = tonumber(b[2]) or now
tokens = math.min(rate, tokens + math.max(0, now - at) * rate / 60000)
local granted = math.max(0, math.min(n, math.floor(tokens)))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 120000)
return {granted, math.max(1, math.ceil(math.max(0, 1 - tokens) * 60 / rate))}
`;

/** Count session `ARGV[1]` unless `ARGV[2]` live ones exist; each lives `ARGV[3]` ms unless renewed. */
const _SESSION = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and
    redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
`;

/** Renew sessions `ARGV[2..]` of this replica for `ARGV[1]` ms more. */
const _RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
return 1
`;

/** The connection options of both clients. */
function _options(url: string, up: () => boolean) {
  return {
    url,
    // Commands fail at once while the connection is down: never queued, never let through.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 2_000,
      // At start: three tries, then fail. Once up: reconnect for ever, 100 ms to 2 s apart.
      reconnectStrategy: (tries: number) =>
        up() ? Math.min(2_000, 100 * (tries + 1)) : tries >= 3 ? new Error("gave up") : 200,
    },
  };
}

function _client(url: string, up: () => boolean) {
  return createClient(_options(url, up));
}

type _Client = ReturnType<typeof _client>;

/** The shared state in one Redis. */
export class RedisState implements SharedState {
  readonly where: string;
  #client: _Client;
  #sub: _Client;
  #revoked = new Map<string, number>();
  #listeners: Array<(identity: string) => void> = [];
  #mine = new Map<string, Set<string>>();
  #renew?: ReturnType<typeof setInterval>;
  #closed = false;
  /** Calls taken from each shared bucket and not used yet, valid for a second. */
  #leases = new Map<string, { left: number; until: number }>();
  /** The bucket script, loaded once (EVALSHA). */
  #sha = "";

  private constructor(where: string, client: _Client, sub: _Client) {
    this.where = where;
    this.#client = client;
    this.#sub = sub;
  }

  /**
   * Connect to the Redis at `url` (two connections: commands, and the
   * revocations' subscription) and load the revocations. Throws a
   * {@link ConfigError} when it cannot be reached within a few seconds.
   */
  static async connect(url: string): Promise<RedisState> {
    const where = _shown(url);
    let up = false;
    const client = _client(url, () => up);
    const sub = _client(url, () => up);
    let last = "";
    for (const c of [client, sub]) c.on("error", (err: Error) => last = err.message);
    const state = new RedisState(where, client, sub);
    try {
      await client.connect();
      await sub.connect();
      await sub.subscribe(_CHANNEL, (message: string) => state.#heard(message));
      await state.#load();
      state.#sha = await client.scriptLoad(_BUCKET);
      sub.on("ready", () => void state.#load().catch(() => {}));
    } catch (err) {
      await state.close();
      throw new ConfigError(
        `cannot reach the shared state ${where} (--shared-state): ${
          last || (err as Error).message
        }; ` +
          "corral does not serve without it, since the limits would not hold across replicas",
      );
    }
    up = true;
    state.#renew = setInterval(() => void state.#renewAll().catch(() => {}), _RENEW_MS);
    Deno.unrefTimer(state.#renew);
    return state;
  }

  get trouble(): string | undefined {
    if (!this.#client.isReady) return `the shared state ${this.where} cannot be reached`;
    if (!this.#sub.isReady) {
      return `the shared state ${this.where} does not deliver revocations now`;
    }
    return undefined;
  }

  /**
   * Calls are taken from the shared bucket a second's worth at a time
   * (`perMinute / 60`, at least 1) and the rest kept here for at most a
   * second: a high limit costs one round trip a second, a low one is exact.
   * Whatever a replica holds was taken from the bucket, so the replicas
   * together never run more than the limit (a lease not used is lost).
   */
  async takeCalls(identity: string, perMinute: number, n: number): Promise<RateGrant> {
    const now = performance.now();
    const lease = this.#leases.get(identity);
    let granted = 0;
    if (lease && lease.until > now) {
      granted = Math.min(n, lease.left);
      lease.left -= granted;
    }
    if (granted === n) return { granted, retryAfterSeconds: 1 };
    const need = n - granted;
    const chunk = Math.max(1, Math.floor(perMinute / 60));
    const script = {
      keys: [`${_PREFIX}rate:${identity}`],
      arguments: [String(perMinute), String(need + chunk - 1)],
    };
    // By its digest; a Redis that restarted has forgotten the script: sent whole again.
    const [got, retry] = await this.#do(() =>
      this.#client.evalSha(this.#sha, script).catch((err: Error) => {
        if (!/NOSCRIPT/.test(err.message)) throw err;
        return this.#client.eval(_BUCKET, script);
      })
    ) as [number, number];
    const used = Math.min(need, Number(got));
    if (this.#leases.size >= 10_000) this.#leases.clear();
    this.#leases.set(identity, { left: Number(got) - used, until: now + 1_000 });
    return { granted: granted + used, retryAfterSeconds: Number(retry) };
  }

  async openSession(identity: string, session: string, max: number): Promise<boolean> {
    const ok = await this.#do(() =>
      this.#client.eval(_SESSION, {
        keys: [`${_PREFIX}sessions:${identity}`],
        arguments: [session, String(max), String(SESSION_TTL_MS)],
      })
    );
    if (Number(ok) !== 1) return false;
    const mine = this.#mine.get(identity) ?? new Set<string>();
    mine.add(session);
    this.#mine.set(identity, mine);
    return true;
  }

  async closeSession(identity: string, session: string): Promise<void> {
    const mine = this.#mine.get(identity);
    mine?.delete(session);
    if (mine && !mine.size) this.#mine.delete(identity);
    await this.#do(() => this.#client.zRem(`${_PREFIX}sessions:${identity}`, session));
  }

  async revoke(identity: string): Promise<void> {
    const at = Date.now();
    await this.#do(() => this.#client.hSet(`${_PREFIX}revoked`, identity, String(at)));
    await this.#do(() => this.#client.publish(_CHANNEL, JSON.stringify({ identity, at })));
  }

  revokedAt(identity: string): number | undefined {
    return this.#revoked.get(identity);
  }

  onRevoked(listener: (identity: string) => void): void {
    this.#listeners.push(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#renew);
    for (const c of [this.#sub, this.#client]) {
      if (c.isOpen) await c.close().catch(() => c.destroy());
    }
  }

  /** A command within {@link _COMMAND_MS}, else an error naming the state. */
  async #do<T>(run: () => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the shared state ${this.where} did not answer within 2 s`)),
        _COMMAND_MS,
      );
    });
    try {
      return await Promise.race([run(), late]);
    } catch (err) {
      if ((err as Error).message.includes(this.where)) throw err;
      throw new Error(`the shared state ${this.where} failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async #load(): Promise<void> {
    const all = await this.#do(() => this.#client.hGetAll(`${_PREFIX}revoked`));
    for (const [identity, at] of Object.entries(all as Record<string, string>)) {
      const before = this.#revoked.get(identity);
      this.#revoked.set(identity, Number(at));
      if (before !== Number(at)) { for (const l of this.#listeners) l(identity); }
    }
  }

  #heard(message: string): void {
    let m: { identity?: unknown; at?: unknown };
    try {
      m = JSON.parse(message);
    } catch {
      return;
    }
    if (typeof m.identity !== "string" || typeof m.at !== "number") return;
    this.#revoked.set(m.identity, Math.max(m.at, this.#revoked.get(m.identity) ?? 0));
    for (const l of this.#listeners) l(m.identity);
  }

  async #renewAll(): Promise<void> {
    for (const [identity, sessions] of this.#mine) {
      await this.#do(() =>
        this.#client.eval(_RENEW, {
          keys: [`${_PREFIX}sessions:${identity}`],
          arguments: [String(SESSION_TTL_MS), ...sessions],
        })
      );
    }
  }
}

/** The URL without its password, for messages. */
function _shown(url: string): string {
  try {
    const u = new URL(url);
    u.password = "";
    u.username = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return "(an invalid URL)";
  }
}
