/**
 * The MCP authorization spec's discovery for a client that gets 401:
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) at
 * `/.well-known/oauth-protected-resource` (also with the endpoint's path
 * appended), and the `WWW-Authenticate` header that points at it (RFC 6750).
 *
 * @module
 */

/** The well-known path of the metadata. */
export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource";

/**
 * Whether `pathname` asks for the metadata of the endpoint at `mcpPath`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isProtectedResourcePath } from "./protected_resource.ts";
 * assert.ok(isProtectedResourcePath("/.well-known/oauth-protected-resource", "/mcp"));
 * assert.ok(isProtectedResourcePath("/.well-known/oauth-protected-resource/mcp", "/mcp"));
 * assert.ok(!isProtectedResourcePath("/.well-known/oauth-protected-resource/x", "/mcp"));
 * ```
 */
export function isProtectedResourcePath(pathname: string, mcpPath: string): boolean {
  return pathname === PROTECTED_RESOURCE_PATH || pathname === PROTECTED_RESOURCE_PATH + mcpPath;
}

/**
 * The resource's URL: the configured one (`auth.resource`, say behind a
 * TLS proxy), else the endpoint at the request's `Host` over http (the
 * request's URL may be a unix socket's when a front relays it).
 */
export function resourceUrl(req: Request, mcpPath: string, configured: string | null): string {
  if (configured) return configured;
  const host = req.headers.get("host");
  try {
    if (host) return new URL(mcpPath, `http://${host}`).href;
  } catch { /* a malformed Host: the request's own URL */ }
  try {
    return new URL(mcpPath, new URL(req.url).origin).href;
  } catch {
    return `http://localhost${mcpPath}`;
  }
}

/** The metadata URL for `resource` (RFC 9728 section 3: the path goes after the well-known part). */
export function metadataUrl(resource: string): string {
  const u = new URL(resource);
  const path = u.pathname === "/" ? "" : u.pathname.replace(/\/$/, "");
  return `${u.origin}${PROTECTED_RESOURCE_PATH}${path}`;
}

/**
 * The metadata document.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { protectedResourceMetadata } from "./protected_resource.ts";
 * const m = protectedResourceMetadata("http://127.0.0.1:8080/mcp", ["https://idp.example"]);
 * assert.equal(m.resource, "http://127.0.0.1:8080/mcp");
 * assert.deepEqual(m.bearer_methods_supported, ["header"]);
 * ```
 */
export function protectedResourceMetadata(
  resource: string,
  authorizationServers: string[],
): {
  resource: string;
  authorization_servers?: string[];
  bearer_methods_supported: string[];
  resource_name: string;
} {
  return {
    resource,
    ...(authorizationServers.length ? { authorization_servers: authorizationServers } : {}),
    bearer_methods_supported: ["header"],
    resource_name: "corral",
  };
}

/**
 * A `WWW-Authenticate` value: `Bearer realm="corral", resource_metadata="…"`,
 * with `error="invalid_token"` and its description when a token was sent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wwwAuthenticate } from "./protected_resource.ts";
 * assert.equal(
 *   wwwAuthenticate("http://h/.well-known/oauth-protected-resource/mcp", 'bad "x"'),
 *   'Bearer realm="corral", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", ' +
 *     "error=\"invalid_token\", error_description=\"bad 'x'\"",
 * );
 * ```
 */
export function wwwAuthenticate(metadata: string, error?: string): string {
  const q = (s: string) => s.replace(/[\\"]/g, "'").replace(/[^\x20-\x7e]/g, "?");
  let v = `Bearer realm="corral", resource_metadata="${q(metadata)}"`;
  if (error !== undefined) v += `, error="invalid_token", error_description="${q(error)}"`;
  return v;
}
