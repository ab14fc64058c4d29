/**
 * `corral mcp`: serve the loaded tools over MCP, on stdio or on
 * Streamable HTTP (`--http [HOST:]PORT`), until stdin ends or SIGINT or
 * SIGTERM. `--watch` reloads changed plugin files and tells the clients.
 *
 * @module
 */
import type { McpHandle, McpRegistry } from "../mcp/mod.ts";
import { pluginSources, watchPlugins } from "../plugins/mod.ts";
import { envVar } from "../config/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import type { CliSession } from "./_open_registry.ts";
import type { CliValues } from "./_options.ts";
import { keepNextLaunch } from "./prestart_recipe.ts";
import { sandboxLimitsOf } from "./_sandbox_limits.ts";
import type { TeamServer } from "./_team_server.ts";
// HTTP serving (hono, identities, tokens) is loaded only for `--http`: stdio starts without it.
import type { McpHttpLimits, McpServed } from "./_serve_mcp_http.ts";

/** Run `corral mcp` with the command line's flags; returns the exit code. */
export async function mcpCommand(values: CliValues, session: CliSession): Promise<number> {
  session.registry.sandboxes.setLimits(sandboxLimitsOf(values));
  // On stdio, the first sandbox this session starts is the one the next session starts ahead.
  if (values.http === undefined) keepNextLaunch();
  // Deno exports OpenTelemetry metrics only when asked; then the metrics are kept from the start
  // (otherwise only the HTTP server loads them: prom-client is ~35 ms of start-up).
  if (/^(true|1)$/i.test(envVar("OTEL_DENO") ?? "")) await import("../telemetry/metrics.ts");
  return await runMcpCommand(session.registry, {
    http: values.http,
    token: values.token,
    noToken: values["no-token"],
    maxQueue: values["max-queue"],
    maxSessions: values["max-sessions"],
    sessionIdle: values["session-idle"],
    stateless: values.stateless,
    maxBody: values["max-body"],
    maxConcurrent: values["max-concurrent"],
    allowOrigin: values["allow-origin"],
    headTimeout: values["head-timeout"],
    maxClientConns: values["max-client-conns"],
    maxConns: values["max-conns"],
    bodyTimeout: values["body-timeout"],
    minBodyRate: values["min-body-rate"],
    identitySessions: values["max-identity-sessions"],
    identityConcurrent: values["max-identity-concurrent"],
    identityQueue: values["max-identity-queue"],
    identityConns: values["max-identity-conns"],
    sharedState: values["shared-state"],
    onServe: (handle) => {
      // A hosted server's tools changed (approval, a crash): tell the clients.
      session.registry.onToolsChanged = () => void handle.notifyToolsChanged();
      return values.watch ? _watch(session, handle) : undefined;
    },
    team: async (token) => (await import("./_team_server.ts")).teamServer(values, session, token),
  });
}

/** `mcp --watch`: reload changed plugin files and tell MCP clients. */
async function _watch(session: CliSession, handle: McpHandle): Promise<void> {
  const { registry, reporter, plugins } = session;
  const watcher = await watchPlugins({
    registry,
    dirs: plugins.dirs,
    // The files may have changed since the start, the settings have not.
    scan: async () =>
      (await pluginSources({
        policy: plugins.policy,
        config: plugins.config,
        workspace: plugins.workspace,
        dirs: plugins.settings.pluginDirs,
      })).sources,
    onChange: () => handle.notifyToolsChanged(),
    log: (text) => reporter.line(`corral: --watch: ${text}`),
  });
  handle.finished.finally(() => watcher.close());
  reporter.line(
    `corral: watching ${plugins.dirs.length} plugin director${
      plugins.dirs.length === 1 ? "y" : "ies"
    }`,
  );
}

/** The `corral mcp` flags, as strings from the command line. */
export interface McpCommandOptions {
  /** `[HOST:]PORT`; absent: stdio. */
  http?: string;
  /** Bearer token; default `CORRAL_MCP_TOKEN`. */
  token?: string;
  /** `--no-token`: serve without a token (loopback only). */
  noToken?: boolean;
  /** `--max-queue N`. */
  maxQueue?: string;
  /** `--max-sessions N`. */
  maxSessions?: string;
  /** `--session-idle SECS`. */
  sessionIdle?: string;
  /** `--stateless`: no sessions. */
  stateless?: boolean;
  /** `--max-body BYTES`. */
  maxBody?: string;
  /** `--max-concurrent N`. */
  maxConcurrent?: string;
  /** `--allow-origin ORIGIN`, repeatable. */
  allowOrigin?: string[];
  /** `--head-timeout SECS`. */
  headTimeout?: string;
  /** `--max-client-conns N`. */
  maxClientConns?: string;
  /** `--max-conns N`. */
  maxConns?: string;
  /** `--body-timeout SECS`. */
  bodyTimeout?: string;
  /** `--min-body-rate BYTES` (0: none). */
  minBodyRate?: string;
  /** `--max-identity-sessions N`. */
  identitySessions?: string;
  /** `--max-identity-concurrent N`. */
  identityConcurrent?: string;
  /** `--max-identity-queue N`. */
  identityQueue?: string;
  /** `--max-identity-conns N`. */
  identityConns?: string;
  /** `--shared-state URL` (read by the team side; checked here to apply with --http only). */
  sharedState?: string;
  /** Called once the server is serving (e.g. to start `--watch`). */
  onServe?: (handle: McpHandle) => void | Promise<void>;
  /** HTTP: identities, per-identity registries and /metrics (core/cli/_team_server.ts). */
  team?: (defaultToken: string | undefined) => Promise<TeamServer>;
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
  const limits = _limits(flags);
  const served: McpServed = flags.http === undefined
    ? { handle: await _serveStdio(registry, flags, limits.stdio) }
    : await (await import("./_serve_mcp_http.ts")).serveMcpHttp(
      registry,
      flags.http,
      flags,
      limits.http,
      log,
    );
  const { handle } = served;
  await flags.onServe?.(handle);
  const stop = () => void handle.close();
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  for (const s of signals) Deno.addSignalListener(s, stop);
  try {
    await handle.finished;
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, stop);
    await served.unrecord?.();
    await served.team?.close();
  }
  return 0;
}

/** `corral mcp` on stdio; a flag that only applies with `--http` is refused. */
async function _serveStdio(
  registry: McpRegistry,
  flags: McpCommandOptions,
  limits: { maxConcurrent?: number; maxQueue?: number; maxMessageBytes?: number },
): Promise<McpHandle> {
  for (
    const [set, flag] of [
      [flags.token, "--token"],
      [flags.noToken, "--no-token"],
      [flags.stateless, "--stateless"],
      [flags.maxSessions, "--max-sessions"],
      [flags.sessionIdle, "--session-idle"],
      [flags.allowOrigin?.length, "--allow-origin"],
      [flags.headTimeout, "--head-timeout"],
      [flags.maxClientConns, "--max-client-conns"],
      ..._HTTP_ONLY.map(([key, flag]) => [flags[key], flag] as const),
    ] as const
  ) {
    if (set) throw new ConfigError(`${flag} only applies with --http`);
  }
  // Each transport loads its part of the MCP SDK only when used.
  const { serveStdio } = await import("../mcp/serve_stdio.ts");
  return await serveStdio(registry, limits);
}

/** Flags that only apply with `--http`, besides the older ones named above. */
const _HTTP_ONLY = [
  ["maxConns", "--max-conns"],
  ["bodyTimeout", "--body-timeout"],
  ["minBodyRate", "--min-body-rate"],
  ["identitySessions", "--max-identity-sessions"],
  ["identityConcurrent", "--max-identity-concurrent"],
  ["identityQueue", "--max-identity-queue"],
  ["identityConns", "--max-identity-conns"],
  ["sharedState", "--shared-state"],
] as const;

/** The limits of either transport from their flags, all checked before either serves. */
function _limits(flags: McpCommandOptions) {
  const maxConcurrent = _positive(flags.maxConcurrent, "--max-concurrent");
  const maxQueue = _positive(flags.maxQueue, "--max-queue");
  const maxBodyBytes = _positive(flags.maxBody, "--max-body");
  const maxSessions = _positive(flags.maxSessions, "--max-sessions");
  const sessionIdle = _positive(flags.sessionIdle, "--session-idle");
  const headTimeout = _positive(flags.headTimeout, "--head-timeout");
  const maxConnsPerClient = _positive(flags.maxClientConns, "--max-client-conns");
  const http: McpHttpLimits = {
    maxBodyBytes,
    maxConcurrent,
    maxQueue,
    maxSessions,
    ...(sessionIdle ? { sessionIdleMs: sessionIdle * 1000 } : {}),
    ...(headTimeout ? { headTimeoutMs: headTimeout * 1000 } : {}),
    maxConnsPerClient,
    ..._httpLimits(flags),
  };
  const stdio = {
    maxConcurrent,
    maxQueue,
    ...(maxBodyBytes ? { maxMessageBytes: maxBodyBytes } : {}),
  };
  return { stdio, http };
}

/** A flag's positive integer; undefined when the flag is not given. */
function _positive(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) {
    throw new ConfigError(`${flag} must be a positive integer, got "${text}"`);
  }
  return n;
}

/** The HTTP front's and the identities' limits from their flags (checked). */
function _httpLimits(flags: McpCommandOptions) {
  const rate = flags.minBodyRate;
  if (rate !== undefined && !/^\d+$/.test(rate.trim())) {
    throw new ConfigError(
      `--min-body-rate must be a number of bytes a second (0: none), got "${rate}"`,
    );
  }
  const bodyTimeout = _positive(flags.bodyTimeout, "--body-timeout");
  const identityDefaults = {
    sessions: _positive(flags.identitySessions, "--max-identity-sessions"),
    concurrent: _positive(flags.identityConcurrent, "--max-identity-concurrent"),
    queued: _positive(flags.identityQueue, "--max-identity-queue"),
    connections: _positive(flags.identityConns, "--max-identity-conns"),
  };
  return {
    maxConns: _positive(flags.maxConns, "--max-conns"),
    ...(bodyTimeout ? { bodyTimeoutMs: bodyTimeout * 1000 } : {}),
    ...(rate !== undefined ? { minBodyRate: Number(rate) } : {}),
    identityDefaults: Object.fromEntries(
      Object.entries(identityDefaults).filter(([, v]) => v !== undefined),
    ),
  };
}
