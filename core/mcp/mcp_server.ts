/**
 * corral's tools over the Model Context Protocol: stdio and Streamable HTTP.
 *
 * A thin layer over the {@link Registry}: `tools/list` shows the loaded tools
 * with their JSON Schemas and annotations derived from the permission
 * letters; `tools/call` runs a tool in its sandbox. Reports become progress
 * and log notifications, cancellation stops the sandbox call, and tools
 * that need confirmation ask the client through elicitation.
 *
 * @module
 */
import process from "node:process";
// @ts-types="@modelcontextprotocol/sdk/server/index"
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  type ListToolsResult,
  type LoggingLevel,
  McpError,
  SetLevelRequestSchema,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { ConfigError } from "../tool/errors.ts";
import type { RegistryCallOptions, ToolInfo } from "../registry/registry.ts";
import type { ToolResult } from "../tool/result.ts";
import { formatSchemas } from "../tool/schema.ts";
import type { ReportKind, ReportOptions } from "../tool/tool.ts";

/** The part of the registry the MCP server uses (a `Registry` fits). */
export interface McpRegistry {
  /** The loaded tools, listed by `tools/list`. */
  loaded(): ToolInfo[];
  /** Every tool, loaded or not. */
  list(): ToolInfo[];
  /** Run a tool; throws a `TypeError` for unknown names. */
  call(name: string, args: unknown, options?: RegistryCallOptions): Promise<ToolResult>;
  /** `Unknown tool "X" (did you mean: …?)`. */
  unknownToolMessage(name: string): string;
}

/** Options shared by every MCP transport. */
export interface McpServerOptions {
  /** Server name in `initialize` (default `corral`). */
  name?: string;
  /** Server version in `initialize` (default corral's version). */
  version?: string;
  /** Calls running at once in one session; more get a tool error result (default 8). */
  maxConcurrent?: number;
  /**
   * Ask the client to confirm through elicitation when it supports it
   * (default true; stateless HTTP turns it off: the answer could reach
   * another instance).
   */
  elicitation?: boolean;
  /** Count of running calls shared by several servers (stateless HTTP). */
  counter?: { running: number };
}

/** Default of {@link McpServerOptions.maxConcurrent}. */
export const DEFAULT_MAX_CONCURRENT = 8;
/** Default of {@link McpHttpOptions.maxBodyBytes}: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const _VERSION = "0.1.0";
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
  /** Close the connection. */
  close(): Promise<void>;
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
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  const counter = options.counter ?? { running: 0 };
  const server = new Server(
    { name: options.name ?? "corral", version: options.version ?? _VERSION },
    {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions: "corral runs every tool in a sandbox that holds only the tool's permission " +
        "letters (r read, w write, x run, n network); see each tool's _meta.",
    },
  );
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
      if (!registry.list().some((t) => t.name === name)) {
        throw new McpError(ErrorCode.InvalidParams, registry.unknownToolMessage(name));
      }
      if (counter.running >= maxConcurrent) {
        return _errorResult(
          `Cannot run tool "${name}": too many calls at once (limit ${maxConcurrent} per session); ` +
            "wait for a running call to finish, or start corral with a higher --max-concurrent",
        );
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
      let last = 0;
      const onReport = (kind: ReportKind, message: string, opts?: ReportOptions) => {
        if (kind === "progress" && token !== undefined) {
          const value = opts?.progress ?? last + 1;
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
      counter.running++;
      let result: ToolResult;
      try {
        result = await registry.call(name, args, {
          signal: extra.signal,
          onReport,
          onLog: (text) => log("debug", text),
          confirm,
        });
      } catch (err) {
        if (err instanceof TypeError) throw new McpError(ErrorCode.InvalidParams, err.message);
        throw err;
      } finally {
        counter.running--;
      }
      await sent;
      return {
        content: [{ type: "text", text: _resultText(result) }],
        structuredContent: result,
        isError: !result.success,
      };
    },
  );

  return {
    server,
    async connect(transport) {
      await server.connect(transport);
      connected = true;
    },
    async notifyToolsChanged() {
      if (!connected) return;
      await server.sendToolListChanged().catch(() => {/* not connected any more */});
    },
    async close() {
      connected = false;
      await server.close();
    },
  };
}

function _resultText(result: ToolResult): string {
  const json = JSON.stringify(result, null, 2);
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

/** Options of {@link serveHttp}. */
export interface McpHttpOptions extends McpServerOptions {
  /** Address to bind (default 127.0.0.1). */
  hostname?: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** Require `Authorization: Bearer TOKEN` on every request. */
  token?: string;
  /** Largest request body in bytes (default 1 MiB); more is refused with 413. */
  maxBodyBytes?: number;
  /** No sessions: each request is served on its own (for load balancers). */
  stateless?: boolean;
  /** Browser origins allowed besides loopback ones, e.g. `https://app.example`. */
  allowedOrigins?: string[];
  /** Path of the endpoint (default `/mcp`). */
  path?: string;
}

/** A running Streamable HTTP server. */
export interface McpHttpHandle extends McpHandle {
  /** The bound address. */
  readonly hostname: string;
  /** The bound port. */
  readonly port: number;
  /** The endpoint, e.g. `http://127.0.0.1:8123/mcp`. */
  readonly url: string;
}

/** Parse `--http [HOST:]PORT` (`8080`, `0.0.0.0:8080`, `[::1]:8080`). */
export function parseListenAddress(text: string): { hostname: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    throw new ConfigError(
      `--http needs [HOST:]PORT, like 8080 or 127.0.0.1:8080 or [::1]:8080, got "${text}"`,
    );
  }
  const host = m[1] ?? "127.0.0.1";
  return { hostname: host.startsWith("[") ? host.slice(1, -1) : host, port };
}

/** True for names and addresses that only reach this machine. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

interface _Session {
  mcp: CorralMcpServer;
  transport: WebStandardStreamableHTTPServerTransport;
}

/**
 * Serve over Streamable HTTP at `/mcp` with `Deno.serve`. Binding a
 * non-loopback address without a token throws a {@link ConfigError}.
 * Requests are checked in this order: Host and Origin (403), bearer token
 * (401), path (404), body size (413).
 */
export function serveHttp(registry: McpRegistry, options: McpHttpOptions): McpHttpHandle {
  const hostname = options.hostname ?? "127.0.0.1";
  const loopback = isLoopback(hostname);
  const token = options.token || undefined;
  if (!loopback && !token) {
    throw new ConfigError(
      `refusing to serve MCP on ${hostname} without a token: anyone who can reach it could run ` +
        "tools. Pass --token TOKEN (or set CORRAL_MCP_TOKEN), or bind 127.0.0.1",
    );
  }
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBody) || maxBody <= 0) {
    throw new ConfigError(`--max-body must be a positive number of bytes, got ${maxBody}`);
  }
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent <= 0) {
    throw new ConfigError(`--max-concurrent must be a positive integer, got ${maxConcurrent}`);
  }
  const path = options.path ?? "/mcp";
  const allowedOrigins = new Set((options.allowedOrigins ?? []).map((o) => o.replace(/\/$/, "")));
  const sessions = new Map<string, _Session>();
  const stateless = options.stateless === true;
  const shared = { running: 0 };
  const serverOptions: McpServerOptions = { ...options, maxConcurrent };
  const expected = token ? new TextEncoder().encode(`Bearer ${token}`) : undefined;

  const refuse = (status: number, message: string, headers: Record<string, string> = {}) =>
    Response.json(
      { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
      { status, headers },
    );

  const originAllowed = (origin: string): boolean => {
    if (allowedOrigins.has(origin)) return true;
    try {
      const u = new URL(origin);
      return loopback && isLoopback(u.hostname) &&
        (u.protocol === "http:" || u.protocol === "https:");
    } catch {
      return false;
    }
  };

  const handle = async (req: Request): Promise<Response> => {
    // DNS rebinding: a loopback server only answers to loopback names.
    const host = req.headers.get("host") ?? "";
    if (loopback) {
      let name = "";
      try {
        name = new URL(`http://${host}`).hostname;
      } catch { /* malformed: refused below */ }
      if (!isLoopback(name)) return refuse(403, `Forbidden: Host "${host}" is not allowed`);
    }
    const origin = req.headers.get("origin");
    if (origin !== null && !originAllowed(origin)) {
      return refuse(403, `Forbidden: Origin "${origin}" is not allowed`);
    }
    if (
      expected &&
      !_sameBytes(new TextEncoder().encode(req.headers.get("authorization") ?? ""), expected)
    ) {
      return refuse(401, "Unauthorized: send Authorization: Bearer <token>", {
        "WWW-Authenticate": 'Bearer realm="corral"',
      });
    }
    if (new URL(req.url).pathname !== path) {
      return refuse(404, `Not found: the endpoint is ${path}`);
    }
    const length = Number(req.headers.get("content-length") ?? "0");
    if (length > maxBody) {
      return refuse(413, `Payload too large: ${length} bytes, limit ${maxBody} (--max-body)`);
    }
    const transportOptions = { maxRequestBodySize: maxBody };
    if (stateless) {
      if (req.method !== "POST") {
        return refuse(405, "Method not allowed: a stateless server only takes POST", {
          Allow: "POST",
        });
      }
      const mcp = createMcpServer(registry, {
        ...serverOptions,
        elicitation: false,
        counter: shared,
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        ...transportOptions,
        sessionIdGenerator: undefined,
      });
      await mcp.connect(transport);
      return await transport.handleRequest(req);
    }
    const id = req.headers.get("mcp-session-id");
    if (id !== null) {
      const session = sessions.get(id);
      if (!session) {
        return Response.json(
          { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null },
          { status: 404 },
        );
      }
      return await session.transport.handleRequest(req);
    }
    if (req.method !== "POST") {
      return refuse(400, "Bad Request: no Mcp-Session-Id header; initialize a session first");
    }
    const mcp = createMcpServer(registry, serverOptions);
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        ...transportOptions,
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, { mcp, transport }),
        onsessionclosed: (sid) => void sessions.delete(sid),
      });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await mcp.connect(transport);
    return await transport.handleRequest(req);
  };

  let httpServer: Deno.HttpServer<Deno.NetAddr>;
  try {
    httpServer = Deno.serve({
      hostname,
      port: options.port,
      onListen: () => {/* the caller prints the URL */},
      onError: (err) => refuse(500, `Internal error: ${(err as Error)?.message ?? err}`),
    }, handle);
  } catch (err) {
    if (
      err instanceof Deno.errors.AddrInUse || err instanceof Deno.errors.PermissionDenied ||
      err instanceof Deno.errors.AddrNotAvailable || err instanceof Deno.errors.NotCapable
    ) {
      throw new ConfigError(
        `cannot listen on ${hostname}:${options.port}: ${(err as Error).message}`,
      );
    }
    throw err;
  }
  const addr = httpServer.addr;
  const shown = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closing: Promise<void> | undefined;
  return {
    hostname: addr.hostname,
    port: addr.port,
    url: `http://${shown}:${addr.port}${path}`,
    finished: httpServer.finished,
    notifyToolsChanged: async () => {
      await Promise.all([...sessions.values()].map((s) => s.mcp.notifyToolsChanged()));
    },
    close: () => {
      closing ??= (async () => {
        const open = [...sessions.values()];
        sessions.clear();
        await Promise.all(open.map((s) => s.mcp.close().catch(() => {})));
        await httpServer.shutdown();
      })();
      return closing;
    },
  };
}

function _sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  // Length leaks, content does not: compare every byte whatever the first difference.
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}

/** The `corral mcp` flags, as strings from the command line. */
export interface McpCommandOptions {
  /** `[HOST:]PORT`; absent: stdio. */
  http?: string;
  /** Bearer token; default `CORRAL_MCP_TOKEN`. */
  token?: string;
  /** `--stateless`: no sessions. */
  stateless?: boolean;
  /** `--max-body BYTES`. */
  maxBody?: string;
  /** `--max-concurrent N`. */
  maxConcurrent?: string;
  /** `--allow-origin ORIGIN`, repeatable. */
  allowOrigin?: string[];
  /** Called once the server is serving (e.g. to start `--watch`). */
  onServe?: (handle: McpHandle) => void | Promise<void>;
}

/**
 * Run `corral mcp`: serve until stdin ends (stdio) or SIGINT/SIGTERM, then
 * return the exit code. Bad flags throw a {@link ConfigError}.
 */
export async function runMcpCommand(
  registry: McpRegistry,
  flags: McpCommandOptions,
  log: (text: string) => void = (t) => console.error(t),
): Promise<number> {
  const number = (text: string | undefined, flag: string): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0) {
      throw new ConfigError(`${flag} must be a positive integer, got "${text}"`);
    }
    return n;
  };
  const maxConcurrent = number(flags.maxConcurrent, "--max-concurrent");
  const maxBodyBytes = number(flags.maxBody, "--max-body");
  let handle: McpHandle;
  if (flags.http === undefined) {
    for (
      const [set, flag] of [[flags.token, "--token"], [flags.stateless, "--stateless"], [
        flags.maxBody,
        "--max-body",
      ], [flags.allowOrigin?.length, "--allow-origin"]] as const
    ) {
      if (set) throw new ConfigError(`${flag} only applies with --http`);
    }
    handle = await serveStdio(registry, { maxConcurrent });
  } else {
    const { hostname, port } = parseListenAddress(flags.http);
    let token = flags.token;
    if (token === undefined) {
      try {
        token = Deno.env.get("CORRAL_MCP_TOKEN") || undefined;
      } catch { /* no env permission: no token */ }
    }
    const http = serveHttp(registry, {
      hostname,
      port,
      token,
      stateless: flags.stateless,
      maxBodyBytes,
      maxConcurrent,
      allowedOrigins: flags.allowOrigin,
    });
    log(
      `corral: MCP over Streamable HTTP at ${http.url}${flags.stateless ? " (stateless)" : ""}${
        token ? " (bearer token required)" : ""
      }`,
    );
    handle = http;
  }
  await flags.onServe?.(handle);
  const stop = () => void handle.close();
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  for (const s of signals) Deno.addSignalListener(s, stop);
  try {
    await handle.finished;
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, stop);
  }
  return 0;
}
