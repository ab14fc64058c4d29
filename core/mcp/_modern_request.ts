/**
 * A 2026-07-28 request over HTTP: no session. Each request carries its
 * revision and the client's capabilities in `_meta`, and is served by a
 * fresh MCP server (the v2 SDK's `createMcpHandler`, which also answers
 * `server/discover`, keeps `subscriptions/listen` streams and checks the
 * envelope and the `Mcp-Method`/`Mcp-Name` headers) over the caller's view
 * of the registry. It went through every check of ./serve_http.ts first:
 * Host, Origin, token or identity, connections, calls per minute, the gate.
 *
 * The principal of a request is its caller: the identity, or (without
 * identities) a digest of its bearer token, as on a stateless server. Its
 * requests share sandboxes; no other caller's do. A call that asks the
 * client is parked between rounds (./_input_rounds.ts), bound to that
 * principal. While a request runs it is live work of its credential:
 * revoked, its calls stop. A `subscriptions/listen` that names tasks is
 * served by ./tasks/_task_listen.ts (the SDK's router knows no task), from
 * the same event bus.
 *
 * @module
 */
import {
  type AuthInfo,
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
} from "@modelcontextprotocol/server";
import { corralVersion } from "../config/mod.ts";
import { CredentialRevokedError } from "../tool/mod.ts";
import { declaresTasks } from "./tasks/_task_methods.ts";
import { isTaskListen, serveTaskListen } from "./tasks/_task_listen.ts";
import type { TaskStore } from "./tasks/_task_store.ts";
import type { Admitted } from "./http_identity.ts";
import { sharedPrincipal } from "./_identity_registry.ts";
import type { CorralMcpServer, McpServerOptions } from "./mcp_server.ts";
import type { RevocationWatch } from "./_revocation_watch.ts";
import type { RpcBody } from "./_rpc_body.ts";

const _CALLER = "corral/modern-caller";
/** Task listen streams one instance keeps open at once (the SDK's bound on its own streams). */
const _MAX_LISTENING = 1024;

/** Who sends one modern request, handed to the server factory with its ticket. */
export interface ModernCaller {
  who?: Admitted;
  /** The request's call ticket (./_call_ticket.ts), as the transport's authInfo. */
  authInfo?: AuthInfo;
  /** Ends its work when its credential is revoked. */
  watch?: RevocationWatch;
  /** Close a principal's sandboxes (the identity's registry view). */
  endPrincipal?: (principal: string) => Promise<void>;
}

/** The modern leg of one HTTP server. */
export class ModernRequests {
  readonly #handler: McpHttpHandler;
  readonly #newServer: (who: Admitted | undefined, more: McpServerOptions) => CorralMcpServer;
  readonly #tasks: TaskStore | undefined;
  /** Task listen streams open now (bounded as the SDK bounds its own). */
  #listening = 0;

  /**
   * `newServer` makes the MCP server of one request for its caller and
   * principal; `tasks` is the instance's task store (its status notifications).
   */
  constructor(
    newServer: (who: Admitted | undefined, more: McpServerOptions) => CorralMcpServer,
    maxBody: number,
    tasks?: TaskStore,
  ) {
    this.#newServer = newServer;
    this.#tasks = tasks;
    this.#handler = createMcpHandler((ctx) => {
      const c = ctx.authInfo?.extra?.[_CALLER] as _Caller | undefined;
      if (!c) throw new Error("corral: a modern request reached the handler unchecked");
      const mcp = newServer(c.who, { principal: c.principal, holdTask: c.holdTask });
      c.served = mcp;
      return mcp.server;
    }, {
      legacy: "reject",
      maxRequestBodySize: maxBody,
      onerror: () => {/* answered to the client; nothing to add */},
    });
  }

  /** True when `req` (its body parsed) is a 2026-07-28 request. */
  static async isModern(req: Request, body: RpcBody | undefined): Promise<boolean> {
    if (req.method !== "POST" || !body) return false;
    if (req.headers.get("mcp-session-id") !== null) return false;
    return !(await isLegacyRequest(req, body.parsed));
  }

  /** Serve `req` (checked) for `c`. */
  async serve(req: Request, body: RpcBody, c: ModernCaller): Promise<Response> {
    const principal = c.who
      ? sharedPrincipal(c.who.identity.name)
      : await callerKey(req.headers.get("authorization"));
    const caller: _Caller = { who: c.who, principal };
    const who = c.who;
    // A task outlives its request: it is live work of the credential until it ends.
    if (who && c.watch) {
      const watch = c.watch;
      caller.holdTask = (end) =>
        watch.hold({
          identity: who.identity.name,
          credential: () => who.credential,
          end: () => end(new CredentialRevokedError(who.identity.name)),
        });
    }
    const authInfo: AuthInfo = {
      ...(c.authInfo ?? { token: "", clientId: "corral", scopes: [] }),
      extra: { ...(c.authInfo?.extra ?? {}), [_CALLER]: caller },
    };
    const unhold = who && c.watch?.hold({
      identity: who.identity.name,
      credential: () => who.credential,
      end: (why) => {
        console.error(`corral: stopped a request of "${who.identity.name}": ${why}`);
        caller.served?.revoke(new CredentialRevokedError(who.identity.name)).catch(() => {});
        c.endPrincipal?.(principal).catch(() => {});
      },
    });
    try {
      if (this.#tasks && isTaskListen(body.parsed)) return this.#taskListen(req, body, caller, c);
      return await this.#handler.fetch(req, { parsedBody: body.parsed, authInfo });
    } finally {
      unhold?.();
    }
  }

  /** A listen request naming tasks: their status notifications and the list changes asked for. */
  #taskListen(req: Request, body: RpcBody, caller: _Caller, c: ModernCaller): Response {
    const message = body.parsed as {
      id: string | number;
      params?: { notifications?: { taskIds?: unknown }; _meta?: Record<string, unknown> };
    };
    // The headers that mirror the body agree with it, as the SDK requires of every request.
    const method = req.headers.get("mcp-method");
    const version = message.params?._meta?.["io.modelcontextprotocol/protocolVersion"];
    const mismatch = method !== null && method !== "subscriptions/listen"
      ? "the Mcp-Method header does not match the request's method"
      : req.headers.get("mcp-protocol-version") !== version
      ? "the MCP-Protocol-Version header does not match the revision in the body's _meta"
      : undefined;
    if (mismatch) {
      return Response.json({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32020, message: `Bad Request: ${mismatch}` },
      }, { status: 400 });
    }
    // Without the extension declared, no task is listened for.
    const caps = message.params?._meta?.["io.modelcontextprotocol/clientCapabilities"];
    const notifications = { ...message.params?.notifications };
    if (!declaresTasks(caps)) notifications.taskIds = [];
    if (this.#listening >= _MAX_LISTENING) {
      return Response.json({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32603, message: "Subscription limit reached" },
      });
    }
    this.#listening++;
    const mcp = this.#newServer(caller.who, { principal: caller.principal });
    const capabilities = mcp.server.getCapabilities();
    mcp.server.close().catch(() => {});
    const who = caller.who;
    return serveTaskListen({ ...message, params: { notifications } }, {
      store: this.#tasks!,
      principal: caller.principal,
      capabilities,
      bus: this.#handler.bus,
      serverInfo: { name: "corral", version: corralVersion() },
      signal: req.signal,
      onEnd: () => this.#listening--,
      ...(who && c.watch
        ? {
          hold: (end: () => void) =>
            c.watch!.hold({ identity: who.identity.name, credential: () => who.credential, end }),
        }
        : {}),
    });
  }

  /** Tell open `subscriptions/listen` streams that the tool list changed. */
  notifyToolsChanged(): void {
    this.#handler.notify.toolsChanged();
  }

  /** Close the open streams and in-flight exchanges. */
  close(): Promise<void> {
    return this.#handler.close();
  }
}

interface _Caller {
  who?: Admitted;
  principal: string;
  served?: CorralMcpServer;
  holdTask?: (end: (reason: Error) => void) => () => void;
}

/** The principal of a caller without identities: a digest of its credentials (never the token). */
export async function callerKey(authorization: string | null): Promise<string> {
  if (!authorization) return "caller:anonymous";
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(authorization));
  return `caller:${
    Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}
