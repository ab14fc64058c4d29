/**
 * MCP over stdio: protocol messages only on stdout, corral's own output on
 * stderr. `tools/call` takes the session's fast lane (./stdio_lane.ts,
 * ./fast_call.ts); everything else the SDK's stdio transport.
 *
 * @module
 */
import { limitedStdin } from "./_stdio_limit.ts";
import process from "node:process";
import { connectStdio } from "./stdio_lane.ts";
import { TaskStore } from "./tasks/_task_store.ts";
import {
  createMcpServer,
  type McpHandle,
  type McpRegistry,
  type McpServerOptions,
} from "./mcp_server.ts";

/** Default largest message on stdio, as on HTTP: 1 MiB (`--max-body`). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Serve over stdio: protocol messages only on stdout. While it runs,
 * `console.log` is sent to stderr so that no stray line corrupts the stream.
 * Stops when stdin ends or `close()` is called.
 */
export async function serveStdio(
  registry: McpRegistry,
  options: McpServerOptions & { maxMessageBytes?: number } = {},
): Promise<McpHandle> {
  const mcp = createMcpServer(registry, options);
  // A message over the limit gets a JSON-RPC error; the server keeps serving.
  const input = limitedStdin(options.maxMessageBytes ?? DEFAULT_MAX_BODY_BYTES);
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = (...data: unknown[]) => console.error(...data);
  let done!: () => void;
  const finished = new Promise<void>((resolve) => done = resolve);
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      input.off("end", onEnd);
      await mcp.close().catch(() => {/* already closed */});
      Object.assign(console, saved);
      done();
    })();
    return closing;
  };
  const onEnd = () => void close();
  mcp.server.onclose = () => void close();
  input.on("end", onEnd);
  // A connection that opens with 2026-07-28 gets a server of its own (./_stdio_modern.ts).
  const tasks = new TaskStore();
  await connectStdio(
    mcp,
    input,
    process.stdout,
    () => createMcpServer(registry, { ...options, tasks }),
    tasks,
  );
  return { finished, notifyToolsChanged: () => mcp.notifyToolsChanged(), close };
}
