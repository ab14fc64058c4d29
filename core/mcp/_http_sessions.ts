/**
 * The MCP sessions of one HTTP server: capped in all (beyond the cap 503)
 * and per identity (beyond its cap 429; counted in the shared state, so
 * across replicas with `--shared-state`), found by `Mcp-Session-Id` only
 * for the identity that opened it, closed when idle (pings and open
 * streams are not use: only requests are), on DELETE, when its credential
 * is revoked (its calls stopped first) or when the server closes. Closing
 * a session closes its MCP server, which ends its principal
 * (Registry.endPrincipal: its sandboxes close, with everything they
 * started).
 *
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { endCancelledStreams } from "./_cancelled_streams.ts";
import type { SharedState } from "../identity/mod.ts";
import { CredentialRevokedError } from "../tool/mod.ts";
import type { Admitted } from "./http_identity.ts";
import { refuse } from "./_http_refusal.ts";
import type { CorralMcpServer } from "./mcp_server.ts";
import type { RevocationWatch } from "./_revocation_watch.ts";

/** Default of McpHttpOptions.maxSessions. */
export const DEFAULT_MAX_SESSIONS = 256;
/** Default of McpHttpOptions.sessionIdleMs: 15 minutes. */
export const DEFAULT_SESSION_IDLE_MS = 15 * 60_000;

interface _Session {
  mcp: CorralMcpServer;
  transport: WebStandardStreamableHTTPServerTransport;
  /** `performance.now()` of its last use (a request other than a ping or a notification). */
  seen: number;
  /** The identity that opened it (with identities). */
  identity?: string;
  /** The `Authorization` header of its last request (its work ends when that is revoked). */
  credential: string | null;
  /** Undo its count in the shared state and its place in the revocation watch. */
  forget: () => void;
}

/** A place for one more session of an identity, held until it opens or fails. */
export interface SessionSlot {
  /** Its name in the shared state. */
  id: string;
  /** Give the place back (the session closed, or never opened). */
  release(): void;
}

/** The open sessions of one server. */
export class HttpSessions {
  readonly #sessions = new Map<string, _Session>();
  /** Sessions being opened: they count against the cap too. */
  #opening = 0;
  readonly #sweeper: ReturnType<typeof setInterval>;
  readonly #state?: SharedState;
  readonly #watch?: RevocationWatch;

  /** Sessions of this server: `max` in all, idle ones closed after `idleMs`. */
  constructor(
    readonly max: number,
    readonly idleMs: number,
    team?: { state: SharedState; watch: RevocationWatch },
  ) {
    this.#state = team?.state;
    this.#watch = team?.watch;
    this.#sweeper = setInterval(() => this.expire(), Math.max(1000, Math.min(idleMs / 4, 30_000)));
    Deno.unrefTimer(this.#sweeper);
  }

  /**
   * The session `id`, if it is open and, with identities, opened by `who`:
   * another identity does not find it. A request that is `use` (not a ping
   * or a notification) marks it used now; its credential is the session's
   * from now on.
   */
  find(id: string, who: Admitted | undefined, use: boolean): _Session | undefined {
    let session = this.#sessions.get(id);
    // A session belongs to the identity that opened it: another one does not find it.
    if (session && who && session.identity !== who.identity.name) session = undefined;
    if (session && use) session.seen = performance.now();
    if (session && who) session.credential = who.credential;
    return session;
  }

  /**
   * Take a place for one more session, counted from now until `release` is
   * called (once the session is open, or failed to open): a burst of
   * initializations cannot overrun the cap, however their steps interleave.
   * No room, even after closing the idle ones: a 503 answer.
   */
  place(): (() => void) | Response {
    if (this.#sessions.size + this.#opening >= this.max) this.expire();
    if (this.#sessions.size + this.#opening >= this.max) {
      return refuse(503, `Too many sessions (${this.max}, --max-sessions); retry later`, {
        "Retry-After": "5",
      });
    }
    this.#opening++;
    let released = false;
    return () => {
      if (!released) this.#opening--;
      released = true;
    };
  }

  /**
   * A place for one more session of `who` within its `max` (every replica's
   * sessions with a shared state): the slot, or a 429 (at its cap) or 503
   * (the shared state cannot be reached).
   */
  async reserve(who: Admitted, max: number): Promise<SessionSlot | Response> {
    const name = who.identity.name;
    const id = crypto.randomUUID();
    let ok: boolean;
    try {
      ok = await this.#state!.openSession(name, id, max);
    } catch (err) {
      return refuse(503, `Service unavailable: ${(err as Error).message}; retry later`, {
        "Retry-After": "5",
      });
    }
    if (!ok) {
      return refuse(
        429,
        `Too many sessions: "${name}" may hold ${max} at once (identities.${name}.limits.sessions ` +
          `or --max-identity-sessions, counted in ${this.#state!.where}); close one or retry later`,
        { "Retry-After": "5" },
      );
    }
    let released = false;
    return {
      id,
      release: () => {
        if (released) return;
        released = true;
        this.#state!.closeSession(name, id).catch(() => {/* expires by itself */});
      },
    };
  }

  /**
   * Open a session for `mcp`, for `who`, in `slot`: `handle` passes the
   * initializing request to its transport.
   */
  async open(
    mcp: CorralMcpServer,
    who: Admitted | undefined,
    slot: SessionSlot | undefined,
    handle: (transport: WebStandardStreamableHTTPServerTransport) => Promise<Response>,
  ): Promise<Response> {
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) => this.#opened(sid, mcp, transport, who, slot),
        // DELETE ends the session: its sandboxes close, with everything they started.
        onsessionclosed: (sid) => this.close(sid),
      });
    transport.onclose = () => {
      const sid = transport.sessionId;
      const s = sid ? this.#sessions.get(sid) : undefined;
      if (sid && s) {
        this.#sessions.delete(sid);
        s.forget();
      }
    };
    try {
      await mcp.connect(transport);
      // A cancelled call is never answered: its POST's stream is ended here instead.
      endCancelledStreams(transport);
      return await handle(transport);
    } finally {
      // Not initialized (a bad first request): its place is free again.
      if (!transport.sessionId || !this.#sessions.has(transport.sessionId)) slot?.release();
    }
  }

  #opened(
    sid: string,
    mcp: CorralMcpServer,
    transport: WebStandardStreamableHTTPServerTransport,
    who: Admitted | undefined,
    slot: SessionSlot | undefined,
  ): void {
    const session: _Session = {
      mcp,
      transport,
      seen: performance.now(),
      identity: who?.identity.name,
      credential: who?.credential ?? null,
      forget: () => {},
    };
    const unhold = who && this.#watch?.hold({
      identity: who.identity.name,
      credential: () => session.credential,
      end: (why) => this.revoke(sid, why),
    });
    session.forget = () => {
      unhold?.();
      slot?.release();
    };
    this.#sessions.set(sid, session);
  }

  /** Close session `sid` (its principal ends). */
  close(sid: string): void {
    const s = this.#sessions.get(sid);
    if (!s) return;
    this.#sessions.delete(sid);
    s.forget();
    s.mcp.close().catch(() => {});
  }

  /**
   * Session `sid`'s credential was revoked (`why`): its calls stop now
   * (audited `denied`, `revoked`), then it closes with its sandboxes.
   */
  revoke(sid: string, why: string): void {
    const s = this.#sessions.get(sid);
    if (!s) return;
    this.#sessions.delete(sid);
    s.forget();
    console.error(`corral: ended a session of "${s.identity}": ${why}`);
    s.mcp.revoke(new CredentialRevokedError(s.identity ?? "")).catch(() => {});
  }

  /**
   * Close every session unused for longer than `idleMs`, pinged or not;
   * one with a call in flight is not idle.
   */
  expire(): void {
    const now = performance.now();
    for (const [sid, s] of this.#sessions) {
      if (s.mcp.running > 0) s.seen = now;
      else if (now - s.seen > this.idleMs) this.close(sid);
    }
  }

  /** Tell every open session's client that the tool list changed. */
  async notifyToolsChanged(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map((s) => s.mcp.notifyToolsChanged()));
  }

  /** Stop expiring and close every session. */
  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    const open = [...this.#sessions.values()];
    this.#sessions.clear();
    for (const s of open) s.forget();
    await Promise.all(open.map((s) => s.mcp.close().catch(() => {})));
  }
}
