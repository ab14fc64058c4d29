/**
 * `corral mcp --http`: the bearer token chosen (the flag, `CORRAL_MCP_TOKEN`,
 * or on loopback a file corral writes), the team side built, the server
 * started and recorded for `--client-config`, and its start lines said.
 *
 * @module
 */
import {
  type McpHandle,
  type McpHttpOptions,
  type McpRegistry,
  recordServer,
  serverToken,
  TOKEN_VAR,
  type TokenSource,
} from "../mcp/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import type { TeamServer } from "./_team_server.ts";

/** The `corral mcp` flags the HTTP side reads besides its limits. */
export interface McpHttpFlags {
  /** `--token T`. */
  token?: string;
  /** `--no-token`: serve without a token (loopback only). */
  noToken?: boolean;
  /** `--stateless`: no sessions. */
  stateless?: boolean;
  /** `--allow-origin ORIGIN`, repeatable. */
  allowOrigin?: string[];
  /** Identities, per-identity registries and /metrics (./_team_server.ts). */
  team?: (defaultToken: string | undefined) => Promise<TeamServer>;
}

/** The limits of the HTTP server, from their flags (checked by the caller). */
export type McpHttpLimits = Omit<
  McpHttpOptions,
  "hostname" | "port" | "token" | "team" | "stateless" | "allowedOrigins"
>;

/** A server serving, and what to close when it is done. */
export interface McpServed {
  handle: McpHandle;
  team?: TeamServer;
  /** Forget the server's record (for `--client-config`). */
  unrecord?: () => Promise<void>;
}

/** Serve `corral mcp` over Streamable HTTP at `address` (`[HOST:]PORT`). */
export async function serveMcpHttp(
  registry: McpRegistry,
  address: string,
  flags: McpHttpFlags,
  limits: McpHttpLimits,
  log: (text: string) => void,
): Promise<McpServed> {
  // The transport loads its part of the MCP SDK only when used.
  const { isLoopback, parseListenAddress, serveHttp } = await import("../mcp/serve_http.ts");
  const { hostname, port } = parseListenAddress(address);
  const { token, source } = await _token(flags, hostname, isLoopback(hostname), log);
  const team = await flags.team?.(token);
  if (team?.metricsTokenFile) {
    log(`corral: /metrics needs "Authorization: Bearer <the token in ${team.metricsTokenFile}>"`);
  }
  const http = await serveHttp(registry, {
    team: team?.identity,
    hostname,
    port,
    token,
    stateless: flags.stateless,
    ...limits,
    allowedOrigins: flags.allowOrigin,
  });
  // Where its token comes from, for --client-config in another shell (never the token itself).
  const unrecord = await recordServer(
    { url: http.url, hostname, port: Number(new URL(http.url).port), source },
    token,
  ).catch(() => undefined);
  log(
    `corral: MCP over Streamable HTTP at ${http.url}${flags.stateless ? " (stateless)" : ""}${
      token ? ` (bearer token required: ${_said(source)})` : ""
    }`,
  );
  if (token) log(`corral: a client's entry for it: corral mcp --client-config --http ${http.url}`);
  return { handle: http, team, unrecord };
}

/**
 * The server's token and where it comes from: `--token`, else
 * `CORRAL_MCP_TOKEN`, else on loopback a file corral writes (or none with
 * `--no-token`, which is for loopback only).
 */
async function _token(
  flags: McpHttpFlags,
  hostname: string,
  loopback: boolean,
  log: (text: string) => void,
): Promise<{ token: string | undefined; source: TokenSource }> {
  let token = flags.token;
  let source: TokenSource = token === undefined ? { kind: "none" } : { kind: "flag" };
  if (token === undefined) {
    try {
      token = Deno.env.get(TOKEN_VAR) || undefined;
    } catch { /* no env permission: no token */ }
    if (token !== undefined) source = { kind: "env", variable: TOKEN_VAR };
  }
  if (flags.noToken) {
    if (token !== undefined) throw new ConfigError("--no-token and a token cannot go together");
    if (!loopback) {
      throw new ConfigError(`--no-token is for loopback only; ${hostname} needs a token`);
    }
    log(
      "Warning: serving MCP without a token (--no-token): any local user or program " +
        "that reaches this port can run the tools",
    );
  } else if (token === undefined && loopback) {
    // Beyond loopback the operator chooses the token (serveHttp refuses without one).
    const made = await serverToken();
    token = made.token;
    source = { kind: "file", file: made.file };
    log(
      `corral: bearer token ${made.created ? "written to" : "read from"} ${made.file} ` +
        `(send "Authorization: Bearer <token>"; --token or CORRAL_MCP_TOKEN to choose one)`,
    );
  }
  return { token, source };
}

/** A token's source as the server's start line says it. */
function _said(source: TokenSource): string {
  switch (source.kind) {
    case "env":
      return `the one in ${source.variable}`;
    case "file":
      return `the one in ${source.file}`;
    case "flag":
      return "the one given with --token";
    case "none":
      return "none";
  }
}
