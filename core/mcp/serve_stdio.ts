/**
 * MCP over stdio: protocol messages only on stdout, corral's own output on
 * stderr.
 *
 * @module
 */
import process from "node:process";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  createMcpServer,
  type McpHandle,
  type McpRegistry,
  type McpServerOptions,
} from "./mcp_server.ts";

/**
 * Serve over stdio: protocol messages only on stdout. While it runs,
 * `console.log` is sent to stderr so that no stray line corrupts the stream.
 * Stops when stdin ends or `close()` is called.
 */
export async function serveStdio(
  registry: McpRegistry,
  options: McpServerOptions = {},
): Promise<McpHandle> {
  const mcp = createMcpServer(registry, options);
  const transport = new StdioServerTransport();
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = (...data: unknown[]) => console.error(...data);
  let done!: () => void;
  const finished = new Promise<void>((resolve) => done = resolve);
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      process.stdin.off("end", onEnd);
      await mcp.close().catch(() => {/* already closed */});
      Object.assign(console, saved);
      done();
    })();
    return closing;
  };
  const onEnd = () => void close();
  mcp.server.onclose = () => void close();
  process.stdin.on("end", onEnd);
  await mcp.connect(transport);
  return { finished, notifyToolsChanged: () => mcp.notifyToolsChanged(), close };
}
