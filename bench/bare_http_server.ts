/**
 * The peer of section 8 of the benchmark: a bare MCP server of the SDK over
 * Streamable HTTP, served the way `core/mcp/serve_http.ts` serves corral's
 * stateless mode (`Deno.serve`, a new `McpServer` and a new
 * `WebStandardStreamableHTTPServerTransport` per request, no session id,
 * JSON answers), with one tool, `ReadFile`, that reads a file of the
 * workspace with `Deno.readTextFile`: no sandbox, no checks. Says
 * `MCP over Streamable HTTP at URL` on stderr once it listens; runs until
 * it is killed.
 *
 *     deno run -A bench/bare_http_server.ts WORKSPACE [PORT]
 *
 * @module
 */
import { resolve } from "node:path";
import {
  fromJsonSchema,
  McpServer,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";

/**
 * The tool's arguments: `{ filepath: string }`, as JSON Schema wrapped for the
 * SDK (its validator compiled once, shared by every per-request server). The
 * SDK 2.x takes Standard Schemas with JSON Schema (zod >= 4.2); corral's zod is 3.
 */
const READ_FILE_INPUT = fromJsonSchema<{ filepath: string }>({
  type: "object",
  properties: { filepath: { type: "string" } },
  required: ["filepath"],
});

/** A new server with the one tool, as the SDK's stateless examples make one per request. */
export function bareServer(workspace: string): McpServer {
  const mcp = new McpServer({ name: "bare-http-bench", version: "1.0.0" });
  mcp.registerTool(
    "ReadFile",
    {
      description: "Read a text file of the workspace",
      inputSchema: READ_FILE_INPUT,
    },
    async ({ filepath }) => ({
      content: [{ type: "text", text: await Deno.readTextFile(resolve(workspace, filepath)) }],
    }),
  );
  return mcp;
}

/** Serve {@link bareServer} statelessly at `/mcp` on `127.0.0.1:port` (0: a free port). */
export function serveBare(workspace: string, port: number): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({
    hostname: "127.0.0.1",
    port,
    onListen: ({ hostname, port }) =>
      console.error(`bare: MCP over Streamable HTTP at http://${hostname}:${port}/mcp`),
  }, async (req) => {
    if (new URL(req.url).pathname !== "/mcp") return new Response("not found", { status: 404 });
    if (req.method !== "POST") return new Response("only POST", { status: 405 });
    const mcp = bareServer(workspace);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await mcp.connect(transport);
    return await transport.handleRequest(req);
  });
}

if (import.meta.main) {
  if (!Deno.args[0]) throw new Error("usage: bare_http_server.ts WORKSPACE [PORT]");
  serveBare(await Deno.realPath(Deno.args[0]), Number(Deno.args[1] ?? 0));
}
