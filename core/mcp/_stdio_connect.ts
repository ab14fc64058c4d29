/**
 * The stdio connection of one MCP session: each complete line (from
 * ./_stdio_limit.ts) goes to the SDK's stdio transport exactly as it
 * arrived, in order; a connection whose first message opens it with
 * 2026-07-28 is served instead by a server of its own (./_stdio_modern.ts).
 *
 * corral had its own `tools/call` lane here and its own stdout writer; both
 * were weighed against this plain SDK path in bench section 6 and removed,
 * gaining under 10 % of the call's p50 (bench/analysis.md, issue 42).
 *
 * @module
 */
import type { Buffer } from "node:buffer";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { CorralMcpServer } from "./mcp_server.ts";
import { LineStream } from "./_stdio_limit.ts";
import { type ModernStdio, modernStdio, opensModern } from "./_stdio_modern.ts";
import type { TaskStore } from "./tasks/_task_store.ts";

/**
 * Connect `mcp` to `lines` (complete lines) and `stdout` through the SDK's
 * stdio transport. With `modern`, a connection that opens with 2026-07-28
 * is served by a server it makes (./_stdio_modern.ts), whose tasks are in
 * `tasks`.
 */
export async function connectStdio(
  mcp: CorralMcpServer,
  lines: LineStream,
  stdout: NodeJS.WritableStream,
  modern?: () => CorralMcpServer,
  tasks?: TaskStore,
): Promise<void> {
  const sdkInput = new LineStream();
  const transport = new StdioServerTransport(
    sdkInput as unknown as NodeJS.ReadableStream & { pause(): void } as never,
    stdout as never,
  );
  await mcp.connect(transport);
  let first = true;
  let other: ModernStdio | undefined;
  const onLine = (line: Buffer) => {
    if (first) {
      first = false;
      if (modern && opensModern(line)) other = modernStdio(modern, stdout, tasks);
    }
    if (other) return other.push(line);
    sdkInput.push(line);
  };
  const onError = (e: unknown) => sdkInput.emit("error", e);
  const closed = transport.onclose;
  transport.onclose = () => {
    closed?.();
    void other?.close();
    // Once closed, nothing reads the lines.
    lines.off("data", onLine);
    lines.off("error", onError);
  };
  lines.on("data", onLine);
  lines.on("error", onError);
}
