/**
 * A request of a server with sessions: one that names its session goes to
 * it (404 when not found, or opened by another identity); a POST without
 * one opens a new session, within the cap.
 *
 * @module
 */
import type { Admitted } from "./http_identity.ts";
import { refuse } from "./http_refusal.ts";
import type { HttpSessions } from "./http_sessions.ts";
import type { CorralMcpServer } from "./mcp_server.ts";

/** Serve `req` (checked) from `who` in `sessions`; `newServer` makes a new session's MCP server. */
export async function serveInSession(
  req: Request,
  sessions: HttpSessions,
  who: Admitted | undefined,
  maxBody: number,
  newServer: () => CorralMcpServer,
): Promise<Response> {
  const id = req.headers.get("mcp-session-id");
  if (id !== null) {
    const session = sessions.find(id, who);
    if (!session) {
      return Response.json(
        { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null },
        { status: 404 },
      );
    }
    return await session.transport.handleRequest(req);
  }
  if (req.method !== "POST") {
    return refuse(400, "Bad Request: no Mcp-Session-Id header; initialize a session first");
  }
  const full = sessions.full();
  if (full) return full;
  return await sessions.open(newServer(), req, who, maxBody);
}
