/**
 * The MCP sessions of one HTTP server: capped (beyond the cap 503), found
 * by `Mcp-Session-Id` only for the identity that opened them, closed when
 * idle, on DELETE or when the server closes. Closing a session closes its
 * MCP server, which ends its principal (Registry.endPrincipal: its
 * sandboxes close, with everything they started).
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Admitted } from "./http_identity.ts";
import { refuse } from "./http_refusal.ts";
import type { CorralMcpServer } from "./mcp_server.ts";

/** Default of McpHttpOptions.maxSessions. */
export const DEFAULT_MAX_SESSIONS = 256;
/** Default of McpHttpOptions.sessionIdleMs: 15 minutes. */
export const DEFAULT_SESSION_IDLE_MS = 15 * 60_000;

interface _Session {
  mcp: CorralMcpServer;
  transport: WebStandardStreamableHTTPServerTransport;
  /** `performance.now()` of its last request. */
  seen: number;
  /** The identity that opened it (with identities). */
  identity?: string;
}

/** The open sessions of one server. */
export class HttpSessions {
  readonly #sessions = new Map<string, _Session>();
  /** Sessions being opened: they count against the cap too. */
  #opening = 0;
  readonly #sweeper: ReturnType<typeof setInterval>;

  constructor(readonly max: number, readonly idleMs: number) {
    this.#sweeper = setInterval(() => this.expire(), Math.max(1000, Math.min(idleMs / 4, 30_000)));
    Deno.unrefTimer(this.#sweeper);
  }

  /**
   * The session `id`, if it is open and, with identities, opened by `who`:
   * another identity does not find it. Finding it marks it used now.
   */
  find(id: string, who: Admitted | undefined): _Session | undefined {
    let session = this.#sessions.get(id);
    // A session belongs to the identity that opened it: another one does not find it.
    if (session && who && session.identity !== who.identity.name) session = undefined;
    if (session) session.seen = performance.now();
    return session;
  }

  /** No room for one more session, even after closing the idle ones: a 503 answer. */
  full(): Response | undefined {
    // Sessions being opened count too: a burst of initializations cannot overrun the cap.
    if (this.#sessions.size + this.#opening >= this.max) this.expire();
    if (this.#sessions.size + this.#opening < this.max) return undefined;
    return refuse(503, `Too many sessions (${this.max}, --max-sessions); retry later`, {
      "Retry-After": "5",
    });
  }

  /** Open a session for `mcp` with the initializing request `req`, for `who`. */
  async open(
    mcp: CorralMcpServer,
    req: Request,
    who: Admitted | undefined,
    maxBody: number,
  ): Promise<Response> {
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        maxRequestBodySize: maxBody,
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) =>
          void this.#sessions.set(sid, {
            mcp,
            transport,
            seen: performance.now(),
            identity: who?.identity.name,
          }),
        // DELETE ends the session: its sandboxes close, with everything they started.
        onsessionclosed: (sid) => this.close(sid),
      });
    transport.onclose = () => {
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
    };
    this.#opening++;
    try {
      await mcp.connect(transport);
      return await transport.handleRequest(req);
    } finally {
      this.#opening--;
    }
  }

  /** Close session `sid` (its principal ends). */
  close(sid: string): void {
    const s = this.#sessions.get(sid);
    if (!s) return;
    this.#sessions.delete(sid);
    s.mcp.close().catch(() => {});
  }

  /** Close every session idle longer than `idleMs`; one with a call in flight is not idle. */
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
    await Promise.all(open.map((s) => s.mcp.close().catch(() => {})));
  }
}
