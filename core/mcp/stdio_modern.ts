/**
 * A stdio connection that opens with 2026-07-28 (its first message is a
 * request whose `_meta` names a revision, or `server/discover`): from then
 * on every line goes to the SDK's stdio entry (`serveStdio` of
 * `@modelcontextprotocol/server/stdio`), which checks each request's
 * envelope, answers `server/discover`, serves `subscriptions/listen` and
 * refuses 2025-era messages, over one corral MCP server of its own (its own
 * principal: its sandboxes are its own), whose questions to the client are
 * input-required rounds (./input_rounds.ts). A connection that opens
 * otherwise is served as before (./stdio_lane.ts).
 *
 * @module
 */
import type { Buffer } from "node:buffer";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { CorralMcpServer } from "./mcp_server.ts";
import { LineStream } from "./stdio_limit.ts";

/** True when `line`, a connection's first, opens it with 2026-07-28. */
export function opensModern(line: Buffer): boolean {
  const text = line.toString("utf8");
  if (!text.includes("io.modelcontextprotocol/protocolVersion") && !text.includes("server/")) {
    return false;
  }
  try {
    const m = JSON.parse(text);
    if (m?.jsonrpc !== "2.0" || typeof m.method !== "string" || m.id === undefined) return false;
    return m.method === "server/discover" ||
      m.params?._meta?.["io.modelcontextprotocol/protocolVersion"] !== undefined;
  } catch {
    return false;
  }
}

/** The 2026-07-28 side of one stdio connection. */
export interface ModernStdio {
  /** Hand it one line of the client. */
  push(line: Buffer): void;
  /** Close it and the servers it made. */
  close(): Promise<void>;
}

/** Serve a connection that opened with 2026-07-28 on `stdout`; `newServer` makes its server. */
export function modernStdio(
  newServer: () => CorralMcpServer,
  stdout: NodeJS.WritableStream,
): ModernStdio {
  const input = new LineStream();
  const wire = new StdioServerTransport(
    input as unknown as NodeJS.ReadableStream & { pause(): void } as never,
    stdout as never,
  );
  const made: CorralMcpServer[] = [];
  const handle = serveStdio(() => {
    const mcp = newServer();
    made.push(mcp);
    return mcp.server;
  }, { transport: wire, legacy: "reject", onerror: () => {/* answered on the wire */} });
  return {
    push: (line) => input.push(line),
    async close() {
      await handle.close().catch(() => {});
      // Each server's principal ends: its sandboxes close.
      await Promise.all(made.map((m) => m.close().catch(() => {})));
    },
  };
}
