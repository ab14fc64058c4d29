/**
 * The stdio connection of one MCP session: each complete line (from
 * ./_stdio_limit.ts) that may be a `tools/call` or its cancellation is
 * parsed once and offered to the session's fast lane (./fast_call.ts);
 * every other line, and every one the lane does not take, goes to the SDK's
 * stdio transport exactly as it arrived, in the same order.
 *
 * `CORRAL_BENCH_MCP_LANES=sdk` turns the lane off, for the benchmark's
 * baseline row (bench/section_mcp.ts) and nothing else: every line goes to
 * the SDK (its dispatch runs the same handler, every check included).
 * Unset, or anything else: the lane runs. Weighed there on a quiet machine
 * it saves a median 8.6 % of the call's p50 (goal 6a) and about a third of
 * its p99 (goal 6b, which it keeps under 1×) and of the host's CPU a call;
 * corral's own stdout writer, weighed alike, gained nothing and is gone.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { envVar } from "../config/mod.ts";
import { FastCalls } from "./fast_call.ts";
import type { CorralMcpServer } from "./mcp_server.ts";
import { LineStream } from "./_stdio_limit.ts";
import { type ModernStdio, modernStdio, opensModern } from "./_stdio_modern.ts";
import type { TaskStore } from "./tasks/_task_store.ts";

/** Whether corral's stdio lane runs: `all`, or `sdk` (every line to the SDK). */
export function stdioLanes(): "all" | "sdk" {
  return envVar("CORRAL_BENCH_MCP_LANES") === "sdk" ? "sdk" : "all";
}

/**
 * Connect `mcp` to `lines` (complete lines) and `stdout`, with the fast
 * lane in front of the SDK transport. Returns the lane (closed with the
 * transport). With `modern`, a connection that opens with 2026-07-28 is
 * served by a server it makes (./_stdio_modern.ts), whose tasks are in `tasks`.
 */
export async function connectStdio(
  mcp: CorralMcpServer,
  lines: LineStream,
  stdout: NodeJS.WritableStream,
  modern?: () => CorralMcpServer,
  tasks?: TaskStore,
): Promise<FastCalls> {
  const sdkInput = new LineStream();
  const transport = new StdioServerTransport(
    sdkInput as unknown as NodeJS.ReadableStream & { pause(): void } as never,
    stdout as never,
  );
  await mcp.connect(transport);
  const lane = new FastCalls(mcp.server, mcp.callTool, transport);
  const fast = stdioLanes() === "all";
  let first = true;
  let other: ModernStdio | undefined;
  const onLine = (line: Buffer) => {
    if (first) {
      first = false;
      if (modern && opensModern(line)) other = modernStdio(modern, stdout, tasks);
    }
    if (other) return other.push(line);
    const message = fast ? laneCandidate(line) : undefined;
    if (message === undefined || !lane.offer(message)) sdkInput.push(line);
  };
  const onError = (e: unknown) => sdkInput.emit("error", e);
  const closed = transport.onclose;
  transport.onclose = () => {
    closed?.();
    lane.close();
    void other?.close();
    // As before the lane: once closed, nothing reads the lines.
    lines.off("data", onLine);
    lines.off("error", onError);
  };
  lines.on("data", onLine);
  lines.on("error", onError);
  return lane;
}

/**
 * The parsed message of a line that may be for the lane (it names
 * `tools/call` or `notifications/cancelled`), else undefined.
 */
export function laneCandidate(line: Buffer): unknown {
  // Decoded first and searched as text (two Buffer searches cost more than the decoding): the
  // names are ASCII, and UTF-8 decoding keeps every ASCII byte and makes no ASCII of others.
  const text = line.toString("utf8");
  if (!text.includes('"tools/call"') && !text.includes('"notifications/cancelled"')) {
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
