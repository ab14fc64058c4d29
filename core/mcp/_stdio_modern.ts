/**
 * A stdio connection that opens with 2026-07-28 (its first message is a
 * request whose `_meta` names a revision, or `server/discover`): from then
 * on every line goes to the SDK's stdio entry (`serveStdio` of
 * `@modelcontextprotocol/server/stdio`), which checks each request's
 * envelope, answers `server/discover`, serves `subscriptions/listen` and
 * refuses 2025-era messages, over one corral MCP server of its own (its own
 * principal: its sandboxes are its own), whose questions to the client are
 * input-required rounds (./_input_rounds.ts); a `subscriptions/listen`
 * naming its tasks gets their status notifications too
 * (./tasks/_task_listen_stdio.ts). A connection that opens otherwise is
 * served as before (./stdio_lane.ts).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { CorralMcpServer } from "./mcp_server.ts";
import { LineStream } from "./_stdio_limit.ts";
import { StdioTaskListen } from "./tasks/_task_listen_stdio.ts";
import type { TaskStore } from "./tasks/_task_store.ts";

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

/**
 * Serve a connection that opened with 2026-07-28 on `stdout`; `newServer`
 * makes its server, whose tasks are in `tasks` (the connection's own).
 */
export function modernStdio(
  newServer: () => CorralMcpServer,
  stdout: NodeJS.WritableStream,
  tasks?: TaskStore,
): ModernStdio {
  const input = new LineStream();
  const send = (m: unknown) => stdout.write(JSON.stringify(m) + "\n");
  const listen = tasks && new StdioTaskListen(tasks, send);
  const wire = new StdioServerTransport(
    input as unknown as NodeJS.ReadableStream & { pause(): void } as never,
    (listen ? _acknowledging(stdout, listen, send) : stdout) as never,
  );
  const made: CorralMcpServer[] = [];
  const handle = serveStdio(() => {
    const mcp = newServer();
    made.push(mcp);
    return mcp.server;
  }, { transport: wire, legacy: "reject", onerror: () => {/* answered on the wire */} });
  return {
    push: (line) => input.push(listen ? Buffer.from(listen.inbound(line.toString("utf8"))) : line),
    async close() {
      listen?.close();
      await handle.close().catch(() => {});
      // Each server's principal ends: its sandboxes close.
      await Promise.all(made.map((m) => m.close().catch(() => {})));
    },
  };
}

/** `stdout` whose acknowledgements of subscriptions pass through `listen` (they name its tasks). */
function _acknowledging(
  stdout: NodeJS.WritableStream,
  listen: StdioTaskListen,
  send: (m: unknown) => void,
): NodeJS.WritableStream {
  return new Proxy(stdout, {
    get(target, key) {
      if (key !== "write") return Reflect.get(target, key);
      return (text: string) => {
        if (typeof text !== "string" || !text.includes("subscriptions/acknowledged")) {
          return target.write(text);
        }
        listen.outbound(JSON.parse(text), send);
        return true;
      };
    },
  });
}
