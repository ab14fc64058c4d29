/**
 * corral's tools over the Model Context Protocol: one session, whatever
 * the transport (./serve_stdio.ts, ./serve_http.ts).
 *
 * A thin layer over the {@link Registry}: `tools/list` shows the loaded tools
 * with their JSON Schemas and annotations derived from the permission
 * letters; `tools/call` runs a tool in its sandbox. Reports become progress
 * and log notifications, cancellation stops the sandbox call, and tools
 * that need confirmation ask the client through elicitation.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/index"
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CallToolRequestSchema,
  type CallToolResult,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  type ListToolsResult,
  type LoggingLevel,
  McpError,
  SetLevelRequestSchema,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { corralVersion } from "../config/version.ts";
import type { RegistryCallOptions, ToolInfo } from "../registry/registry.ts";
import type { ToolResult } from "../tool/result.ts";
import { formatSchemas } from "../tool/schema.ts";
import type { ReportKind, ReportOptions } from "../tool/tool.ts";
import { CallGate, DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUE } from "./call_gate.ts";
import { mcpContent } from "../tool/content.ts";
import type { HostedServers } from "../hosted/hosted_servers.ts";
import { serveHostedResources } from "./hosted_resources.ts";

export interface McpRegistry {
  /** The loaded tools, listed by `tools/list`. */
  loaded(): ToolInfo[];
  /** Every tool, loaded or not. */
  list(): ToolInfo[];
  /** Run a tool; throws a `TypeError` for unknown names. */
  call(name: string, args: unknown, options?: RegistryCallOptions): Promise<ToolResult>;
  /** `Unknown tool "X" (did you mean: …?)`. */
  unknownToolMessage(name: string): string;
  /** A principal ended: close its sandboxes and kill all they started (Registry.endPrincipal). */
  endPrincipal?(principal: string): Promise<void>;
  /** Audit a call refused before `call` (Registry.auditRefusal): one `denied` line. */
  auditRefusal?(
    name: string,
    args: unknown,
    options: RegistryCallOptions,
    reason: string,
    message: string,
  ): Promise<void>;
  /** Hosted MCP servers: their resources and prompts are served too (core/hosted/). */
  hosted?: HostedServers;
}

/** Options shared by every MCP transport. */
export interface McpServerOptions {
  /** Server name in `initialize` (default `corral`). */
  name?: string;
  /** Server version in `initialize` (default corral's version). */
  version?: string;
  /** Calls running at once in the instance (default 8); more wait in the queue. */
  maxConcurrent?: number;
  /** Calls waiting for a slot (default 256); more get a tool error result at once. */
  maxQueue?: number;
  /**
   * Ask the client to confirm through elicitation when it supports it
   * (default true; stateless HTTP turns it off: the answer could reach
   * another instance).
   */
  elicitation?: boolean;
  /** The instance's gate, shared by every session (default: one of its own). */
  gate?: CallGate;
  /**
   * Whom this server's calls are for (RegistryCallOptions.principal), kept
   * when it closes (a stateless caller's token). Default: a principal of its
   * own, ended when the session closes, so that its sandboxes close with it.
   */
  principal?: string;
  /** Who this session is, for the audit log (an HTTP identity; default `local`). */
  identity?: string;
}

export { DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUE } from "./call_gate.ts";

const _CONFIRM_TIMEOUT_MS = 10 * 60_000;
const _LEVELS: LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];
const _REPORT_LEVEL: Record<ReportKind, LoggingLevel> = {
  start: "info",
  progress: "info",
  result: "info",
  info: "info",
  warning: "warning",
  error: "error",
};

/** One MCP session: an SDK `Server` wired to the registry. */
export interface CorralMcpServer {
  /** The SDK server (connect it to one transport). */
  readonly server: Server;
  /** Connect to a transport and start serving. */
  connect(transport: Transport): Promise<void>;
  /** Send `notifications/tools/list_changed` (ignored before the client is connected). */
  notifyToolsChanged(): Promise<void>;
  /** Close the connection (and end its own principal). */
  close(): Promise<void>;
  /** Whom its calls are for: no other session's calls share their sandboxes. */
  readonly principal: string;
}

/**
 * Build an MCP server over a registry: `tools/list`, `tools/call`,
 * `logging/setLevel`, progress, cancellation and elicitation.
 *
 * @example
 * ```ts ignore
 * import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
 * import { Registry } from "../registry/registry.ts";
 * import { createMcpServer } from "./mcp_server.ts";
 * const registry = await Registry.create({ privileges: "r" });
 * const [, serverSide] = InMemoryTransport.createLinkedPair();
 * await createMcpServer(registry).connect(serverSide);
 * ```
 */
export function createMcpServer(
  registry: McpRegistry,
  options: McpServerOptions = {},
): CorralMcpServer {
  const gate = options.gate ??
    new CallGate(
      options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
      options.maxQueue ?? DEFAULT_MAX_QUEUE,
    );
  const server = new Server(
    { name: options.name ?? "corral", version: options.version ?? corralVersion() },
    {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions: "corral runs every tool in a sandbox that holds only the tool's permission " +
        "letters (r read, w write, x run, n network); see each tool's _meta.",
    },
  );
  // One session, one principal: its sandboxes are its own and close with it.
  const principal = options.principal ?? `session:${crypto.randomUUID()}`;
  if (registry.hosted?.entries.length) serveHostedResources(server, registry.hosted, principal);
  let ended = false;
  const end = () => {
    if (ended || options.principal !== undefined) return;
    ended = true;
    registry.endPrincipal?.(principal).catch(() => {/* closing: nothing to tell */});
  };
  // Until a client asks for more with logging/setLevel, only warnings and
  // errors are sent: each call then costs one message, not one per report.
  let minLevel: LoggingLevel = "warning";
  let connected = false;

  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    minLevel = request.params.level;
    return {};
  });

  server.setRequestHandler(ListToolsRequestSchema, (): ListToolsResult => {
    return { tools: formatSchemas(registry.loaded(), "mcp") as Tool[] };
  });

  server.setRequestHandler(
    CallToolRequestSchema,
    async (request, extra): Promise<CallToolResult> => {
      const { name } = request.params;
      const args = request.params.arguments ?? {};
      // Refused before the registry runs it: audited here, as `denied`.
      const who = { principal, session: principal, identity: options.identity };
      if (!registry.list().some((t) => t.name === name)) {
        const message = registry.unknownToolMessage(name);
        await registry.auditRefusal?.(name, args, who, "unknown_tool", message).catch(() => {});
        throw new McpError(ErrorCode.InvalidParams, message);
      }
      const release = await gate.acquire(extra.signal);
      if (!release) {
        const message = `too busy: ${gate.running} calls running and ${gate.waiting} waiting ` +
          `(--max-concurrent ${gate.slots}, --max-queue ${gate.queue}); try again shortly`;
        await registry.auditRefusal?.(name, args, who, "limits", message).catch(() => {});
        return _errorResult(`Cannot run tool "${name}": ${message}`);
      }
      const token = extra._meta?.progressToken;
      let sent = Promise.resolve();
      const send = (method: string, params: Record<string, unknown>) => {
        // Chained so that notifications keep their order and precede the result.
        sent = sent.then(() =>
          extra.sendNotification({ method, params } as Parameters<typeof extra.sendNotification>[0])
        ).catch(() => {/* the client went away: nothing to tell it */});
      };
      const log = (level: LoggingLevel, data: string) => {
        if (_LEVELS.indexOf(level) < _LEVELS.indexOf(minLevel)) return;
        send("notifications/message", { level, logger: name, data });
      };
      let last = -Infinity; // progress may start at 0
      const onReport = (kind: ReportKind, message: string, opts?: ReportOptions) => {
        if (kind === "progress" && token !== undefined) {
          const value = opts?.progress ?? (last === -Infinity ? 1 : last + 1);
          if (value > last) {
            last = value;
            const params: Record<string, unknown> = { progressToken: token, progress: value };
            if (opts?.total !== undefined) params.total = opts.total;
            if (message) params.message = message;
            send("notifications/progress", params);
            return;
          }
        }
        log(_REPORT_LEVEL[kind], message);
      };
      const canElicit = options.elicitation !== false &&
        server.getClientCapabilities()?.elicitation !== undefined;
      const confirm = canElicit
        ? async (tool: ToolInfo, callArgs: unknown): Promise<boolean> => {
          try {
            const answer = await extra.sendRequest(
              {
                method: "elicitation/create",
                params: {
                  message: `Run ${tool.name} (letters ${tool.permissions || "none"}) with ${
                    JSON.stringify(callArgs)
                  }?`,
                  requestedSchema: {
                    type: "object",
                    properties: {
                      approve: { type: "boolean", title: `Run ${tool.name}`, default: true },
                    },
                  },
                },
              },
              ElicitResultSchema,
              // A person answers: allow longer than the SDK's 60 s default.
              { signal: extra.signal, timeout: _CONFIRM_TIMEOUT_MS },
            );
            return answer.action === "accept" && answer.content?.approve !== false;
          } catch {
            return false;
          }
        }
        : undefined;
      // A tool's questions go to the client of this call, if it can answer them.
      const caps = server.getClientCapabilities() ?? {};
      // `ended` aborts when the call returns: a question still open is withdrawn.
      const onAsk = async (
        kind: "sample" | "elicit",
        params: unknown,
        ended?: AbortSignal,
      ): Promise<unknown> => {
        if (kind === "sample" && !caps.sampling) {
          throw new Error("the client does not support sampling (sampling/createMessage)");
        }
        if (kind === "elicit" && (!caps.elicitation || options.elicitation === false)) {
          throw new Error("the client cannot be asked here (no elicitation)");
        }
        return await extra.sendRequest(
          {
            method: kind === "sample" ? "sampling/createMessage" : "elicitation/create",
            params: params as Record<string, unknown>,
          } as Parameters<typeof extra.sendRequest>[0],
          (kind === "sample" ? CreateMessageResultSchema : ElicitResultSchema) as never,
          {
            signal: ended ? AbortSignal.any([extra.signal, ended]) : extra.signal,
            timeout: _CONFIRM_TIMEOUT_MS,
          },
        );
      };
      let result: ToolResult;
      try {
        // A call that arrives as its session closes starts nothing that would outlive it.
        if (ended) return _errorResult(`Cannot run tool "${name}": the session has ended`);
        result = await registry.call(name, args, {
          principal,
          // The audit line's session is the principal: one per MCP session (or stateless caller).
          session: principal,
          ...(options.identity ? { identity: options.identity } : {}),
          signal: extra.signal,
          onReport,
          onLog: (text) => log("debug", text),
          confirm,
          onAsk,
        });
      } catch (err) {
        if (err instanceof TypeError) throw new McpError(ErrorCode.InvalidParams, err.message);
        throw err;
      } finally {
        release();
      }
      await sent;
      return {
        content: mcpContent(result, () => _resultText(result)) as CallToolResult["content"],
        structuredContent: _structured(result),
        isError: !result.success,
      };
    },
  );

  return {
    server,
    principal,
    async connect(transport) {
      await server.connect(transport);
      // However the transport closes (DELETE, idle expiry, stdin's end), the principal ends.
      const closed = transport.onclose;
      transport.onclose = () => {
        closed?.();
        end();
      };
      connected = true;
    },
    async notifyToolsChanged() {
      if (!connected) return;
      await server.sendToolListChanged().catch(() => {/* not connected any more */});
    },
    async close() {
      connected = false;
      await server.close();
      end();
    },
  };
}

/** The result without its content blocks (they travel as `content`). */
function _structured(result: ToolResult): ToolResult {
  if (!Array.isArray(result.content_blocks)) return result;
  const { content_blocks: _blocks, ...rest } = result;
  return rest as ToolResult;
}

function _resultText(result: ToolResult): string {
  const json = JSON.stringify(_structured(result), null, 2);
  const problems = result.problems;
  if (result.success || !Array.isArray(problems) || problems.length === 0) return json;
  // Invalid arguments: one line per problem before the JSON, for the model.
  return `${result.error}\n${problems.map((p) => `- ${p}`).join("\n")}\n\n${json}`;
}

function _errorResult(message: string): CallToolResult {
  const result = { success: false, error: message };
  return {
    content: [{ type: "text", text: JSON.stringify(result, null, 2) }],
    structuredContent: result,
    isError: true,
  };
}

/** A running MCP server, whatever its transport. */
export interface McpHandle {
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
  /** Tell every connected client that the tool list changed. */
  notifyToolsChanged(): Promise<void>;
  /** Stop serving. */
  close(): Promise<void>;
}
