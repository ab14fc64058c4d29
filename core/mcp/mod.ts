/**
 * corral's MCP server on the v2 SDK, its stdio and HTTP transports, sessions,
 * tasks, and the HTTP front's limits.
 *
 * @module
 */
export { AuthFailures } from "./auth_failures.ts";
export { type HttpIdentity, httpIdentityFromConfig, teamPolicy } from "./http_identity.ts";
export { type McpHandle, type McpRegistry } from "./mcp_server.ts";
export { serveHttp } from "./serve_http.ts";
export { serverToken } from "./server_token.ts";
export {
  recordServer,
  runningServer,
  type ServerRecord,
  TOKEN_VAR,
  tokenMatches,
  type TokenSource,
} from "./token_source.ts";
export { type McpHttpOptions } from "./serve_http.ts";
