/**
 * A request of a server with sessions: one that names its session goes to
 * it (404 when not found, or opened by another identity); a POST without
 * one opens a new session, within the instance's cap (503) and its
 * identity's (429).
 *
 * @module
 */
import type { AuthInfo } from "@modelcontextprotocol/server";
import type { Admitted } from "./http_identity.ts";
import { refuse } from "./_http_refusal.ts";
import type { HttpSessions } from "./_http_sessions.ts";
import type { CorralMcpServer } from "./mcp_server.ts";
import type { RpcBody } from "./_rpc_body.ts";

/** One checked request of a server with sessions. */
export interface SessionRequest {
  req: Request;
  /** Who sent it (with identities). */
  who?: Admitted;
  /** Its parsed body (a POST). */
  body?: RpcBody;
  /** For the transport's handlers: the request's call ticket (./_call_ticket.ts). */
  authInfo?: AuthInfo;
  /** Sessions `who` may hold at once (with identities). */
  maxSessions?: number;
}

/** Serve `r` in `sessions`; `newServer` makes a new session's MCP server. */
export async function serveInSession(
  r: SessionRequest,
  sessions: HttpSessions,
  newServer: () => CorralMcpServer,
): Promise<Response> {
  const { req, who, body } = r;
  const options = { parsedBody: body?.parsed, authInfo: r.authInfo };
  const id = req.headers.get("mcp-session-id");
  if (id !== null) {
    const session = sessions.find(id, who, body?.use ?? false);
    if (!session) {
      return Response.json(
        { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null },
        { status: 404 },
      );
    }
    return await session.transport.handleRequest(req, options);
  }
  if (req.method !== "POST") {
    return refuse(400, "Bad Request: no Mcp-Session-Id header; initialize a session first");
  }
  // The instance's place is taken before any wait (the identity's, in the shared state).
  const place = sessions.place();
  if (place instanceof Response) return place;
  try {
    const slot = who && r.maxSessions !== undefined
      ? await sessions.reserve(who, r.maxSessions)
      : undefined;
    if (slot instanceof Response) return slot;
    return await sessions.open(newServer(), who, slot, (t) => t.handleRequest(req, options));
  } finally {
    place();
  }
}

/** The principal of the session `req` names for `who`, else `(none)`: never a header value. */
export function sessionPrincipal(
  req: Request,
  sessions: HttpSessions,
  who: Admitted | undefined,
): string {
  const id = req.headers.get("mcp-session-id");
  return (id !== null && sessions.find(id, who, false)?.mcp.principal) || "(none)";
}
