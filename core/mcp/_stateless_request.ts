/**
 * A request of a stateless server (for load balancers): POST only, refused
 * with 429 + `Retry-After` while the instance's gate is full (its body
 * unread, so that a balancer can retry elsewhere), else served on its own
 * with one JSON answer. Its principal is its caller: the identity, or a
 * digest of its bearer token, so its requests share sandboxes, no one
 * else's do. While it runs it is live work of its credential: revoked, its
 * calls stop and its identity's sandboxes close.
 *
 * @module
 */
import {
  type AuthInfo,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import { CredentialRevokedError } from "../tool/mod.ts";
import type { CallGate } from "./_call_gate.ts";
import type { Admitted } from "./http_identity.ts";
import { refuse } from "./_http_refusal.ts";
import { sharedPrincipal } from "./_identity_registry.ts";
import type { CorralMcpServer, McpServerOptions } from "./mcp_server.ts";
import type { RevocationWatch } from "./_revocation_watch.ts";
import type { RpcBody } from "./_rpc_body.ts";

/** A stateless request's caller: who, its parsed body, its call ticket. */
export interface StatelessCaller {
  who?: Admitted;
  body?: RpcBody;
  authInfo?: AuthInfo;
  /** Ends its work when its credential is revoked. */
  watch?: RevocationWatch;
  /** Close a principal's sandboxes (the identity's registry view). */
  endPrincipal?: (principal: string) => Promise<void>;
}

/** Refused before its body is read while every slot and the queue are full: a 429. */
export function statelessBusy(req: Request, gate: CallGate): Response | undefined {
  if (req.method !== "POST") {
    return refuse(405, "Method not allowed: a stateless server only takes POST", {
      Allow: "POST",
    });
  }
  // Beyond the queue a request is refused here (its body unread), so that a load
  // balancer can retry elsewhere.
  if (gate.full) {
    return refuse(429, "Too many requests: every slot and the queue are full; retry", {
      "Retry-After": "1",
    });
  }
  return undefined;
}

/** Serve `req` (checked) from `c.who` on its own; `newServer` makes its MCP server. */
export async function serveStateless(
  req: Request,
  c: StatelessCaller,
  newServer: (more: McpServerOptions) => CorralMcpServer,
): Promise<Response> {
  // A stateless caller is its bearer token: its requests share sandboxes, no one else's do.
  // With identities, a stateless caller is its identity (a JWT may be renewed).
  const principal = c.who
    ? sharedPrincipal(c.who.identity.name)
    : await _callerKey(req.headers.get("authorization"));
  const mcp = newServer({ elicitation: false, principal });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    // One JSON answer per request, no event stream: a replica that dies mid-call
    // gives the balancer and the client an error, never a stream left open.
    enableJsonResponse: true,
  });
  await mcp.connect(transport);
  const who = c.who;
  const unhold = who && c.watch?.hold({
    identity: who.identity.name,
    credential: () => who.credential,
    end: (why) => {
      console.error(`corral: stopped a request of "${who.identity.name}": ${why}`);
      mcp.revoke(new CredentialRevokedError(who.identity.name)).catch(() => {});
      c.endPrincipal?.(principal).catch(() => {});
    },
  });
  try {
    return await transport.handleRequest(req, { parsedBody: c.body?.parsed, authInfo: c.authInfo });
  } finally {
    unhold?.();
  }
}

/** The principal of a stateless caller: a digest of its credentials (never the token itself). */
async function _callerKey(authorization: string | null): Promise<string> {
  if (!authorization) return "caller:anonymous";
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(authorization));
  return `caller:${
    Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}
