/**
 * Speaking MCP to a server as a client does: a raw `initialize` request and
 * the headers of a Streamable HTTP POST (for tests that speak HTTP or stdio
 * without the SDK), and an SDK client with a bearer token.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { INIT_BODY, MCP_POST_HEADERS } from "./mcp_client.ts";
 * assert.equal(JSON.parse(INIT_BODY).method, "initialize");
 * assert.match(MCP_POST_HEADERS.Accept, /text\/event-stream/);
 * ```
 *
 * @module
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

/** A raw MCP `initialize` request (id 1). */
export const INIT_REQUEST = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  },
};

/** {@link INIT_REQUEST} as JSON text. */
export const INIT_BODY: string = JSON.stringify(INIT_REQUEST);

/** The headers of a JSON-RPC POST to a Streamable HTTP MCP server. */
export const MCP_POST_HEADERS = {
  "Content-Type": "application/json",
  Accept: "application/json, text/event-stream",
};

/** An SDK client connected over Streamable HTTP to `url` with a bearer `token`. */
export async function connectWithToken(url: string, token: string, name: string): Promise<Client> {
  const client = new Client({ name, version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}
