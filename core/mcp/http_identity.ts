/**
 * Identities on the HTTP server: the routes that need none (the
 * protected-resource metadata, `/metrics` behind its own token), the
 * bearer token or JWT of every other request resolved to an identity
 * (401 with `WWW-Authenticate`, 403 for an identity the policy does not
 * admit), calls per minute per identity (429 with `Retry-After`), and the
 * registry each identity's sessions see: only its tools, its calls at once,
 * its questions per call, each call traced and counted under its name.
 *
 * @module
 */
import { closestNames } from "../config/closest.ts";
import type { CorralConfig } from "../config/corral_config.ts";
import { AskBudget } from "../identity/ask_budget.ts";
import { Authenticator } from "../identity/authenticator.ts";
import { ConcurrencyLimiter } from "../identity/concurrency_limiter.ts";
import {
  IdentityPolicy,
  IdentityRefusedError,
  type ResolvedIdentity,
} from "../identity/identity_policy.ts";
import { JwtVerifier } from "../identity/jwt_verifier.ts";
import {
  isProtectedResourcePath,
  metadataUrl,
  protectedResourceMetadata,
  resourceUrl,
  wwwAuthenticate,
} from "../identity/protected_resource.ts";
import { RateLimiter } from "../identity/rate_limiter.ts";
import { TokenStore } from "../identity/token_store.ts";
import { type CorralMetrics, telemetry } from "../telemetry/metrics.ts";
import { metricsResponse } from "../telemetry/metrics_endpoint.ts";
import { traceCall } from "../telemetry/spans.ts";
import { outcomeOf } from "../guard/audit.ts";
import { ConfigError } from "../tool/errors.ts";
import type { McpRegistry } from "./mcp_server.ts";
import { revocableStream } from "./revocable_stream.ts";

/** What {@link HttpIdentity} needs. */
export interface HttpIdentityOptions {
  /** Resolves bearer tokens. */
  authenticator: Authenticator;
  /** What each identity gets. */
  policy: IdentityPolicy;
  /** `/metrics` is served only with this token (absent: no `/metrics`). */
  metricsToken?: string;
  /** The server's URL as clients see it (`auth.resource`), or null: the request's. */
  resource?: string | null;
  /** Authorization servers for the metadata. */
  authorizationServers?: string[];
  /** Called before each scrape (to sample gauges). */
  onScrape?: () => void;
  /** Where calls are counted (default: the process's). */
  metrics?: CorralMetrics;
  /**
   * The registry of each identity workspace other than the server's (see
   * {@link IdentityPolicy.workspaces}); an identity whose workspace has none is refused.
   */
  registries?: Map<string, McpRegistry>;
  /** How often an open GET stream's token is checked again (default 5 s). */
  streamRecheckMs?: number;
  /** Told of the calls of a request refused after authentication (429): for the audit log. */
  onRefused?: (refused: RefusedCalls) => void;
}

/** The calls of one request refused before any session saw them (see {@link HttpIdentityOptions.onRefused}). */
export interface RefusedCalls {
  /** Who sent them. */
  identity: string;
  /** The identity's workspace (its registry writes the lines). */
  workspace: string;
  /** The request's `Mcp-Session-Id`, or `(none)`. */
  session: string;
  /** Each `tools/call` of the request: the tool's name and its arguments. */
  calls: Array<{ name: string; args: unknown }>;
  /** A word for the audit's `reason` (`rate_limit`). */
  reason: string;
  /** The refusal as the client got it. */
  message: string;
}

/** A request that may go on: who sent it and the registry its session sees. */
export interface Admitted {
  /** The identity's policy. */
  identity: ResolvedIdentity;
}

/** The identity side of one HTTP server. */
export class HttpIdentity {
  #o: HttpIdentityOptions;
  #rates = new RateLimiter();
  #running = new ConcurrencyLimiter();
  #views = new Map<string, { registry: McpRegistry; view: McpRegistry }>();
  #gate?: { readonly waiting: number };

  /** The identity side for `options`. */
  constructor(options: HttpIdentityOptions) {
    this.#o = options;
  }

  /**
   * Answer the routes that need no identity: the protected-resource
   * metadata and `/metrics`. Null for every other request.
   */
  async route(req: Request, mcpPath: string): Promise<Response | null> {
    const pathname = new URL(req.url).pathname;
    if (isProtectedResourcePath(pathname, mcpPath)) {
      if (req.method !== "GET") {
        return new Response(null, { status: 405, headers: { Allow: "GET" } });
      }
      const resource = resourceUrl(req, mcpPath, this.#o.resource ?? null);
      return Response.json(protectedResourceMetadata(resource, this.#o.authorizationServers ?? []));
    }
    if (pathname === "/metrics" && this.#o.metricsToken) {
      if (this.#gate) (this.#o.metrics ?? telemetry).queueDepth(this.#gate.waiting);
      this.#o.onScrape?.();
      return await metricsResponse(req, this.#o.metricsToken, this.#o.metrics);
    }
    return null;
  }

  /**
   * `res` to a GET (a session's stream of server messages) ended at the
   * first re-check, every `streamRecheckMs` (default 5 s), after its token
   * no longer names `who` (revoked, expired, its JWT key rotated out).
   * Other responses are returned as they are.
   */
  watchStream(req: Request, res: Response, who: Admitted): Response {
    const auth = this.#o.authenticator;
    if (req.method !== "GET" || !auth.required) return res;
    const authorization = req.headers.get("authorization");
    return revocableStream(res, async () => {
      const r = await auth.authenticate(authorization);
      return r.ok && r.identity === who.identity.name;
    }, this.#o.streamRecheckMs);
  }

  /** Sample this call gate's queue at each scrape (`corral_call_queue_depth`). */
  observeGate(gate: { readonly waiting: number }): void {
    this.#gate = gate;
  }

  /**
   * Authenticate `req` and apply its identity's calls per minute (a
   * `tools/call` on `mcpPath` takes one; a body over `maxBody` is left to the
   * transport): a Response to send back (401, 403, 429, 500), or who it is.
   */
  async admit(req: Request, mcpPath: string, maxBody: number): Promise<Response | Admitted> {
    const auth = await this.#o.authenticator.authenticate(req.headers.get("authorization"));
    if (!auth.ok) {
      if (auth.detail) console.error(`corral: authentication: ${auth.detail}`);
      const meta = metadataUrl(resourceUrl(req, mcpPath, this.#o.resource ?? null));
      return _jsonRpcError(auth.status, auth.message, {
        "WWW-Authenticate": wwwAuthenticate(meta, auth.tokenSent ? auth.message : undefined),
      });
    }
    let identity: ResolvedIdentity;
    try {
      identity = this.#o.policy.resolve(auth.identity);
    } catch (err) {
      if (err instanceof IdentityRefusedError) return _jsonRpcError(403, err.message);
      throw err;
    }
    if (
      identity.workspace !== this.#o.policy.serverWorkspace &&
      !this.#o.registries?.has(identity.workspace)
    ) {
      return _jsonRpcError(
        403,
        `Forbidden: no workspace is open for "${identity.name}" (${identity.workspace}); ` +
          'name the identity in corral.json "identities" and restart the server',
      );
    }
    const perMinute = identity.limits.perMinute;
    const calls = perMinute && req.method === "POST" && new URL(req.url).pathname === mcpPath
      ? await _callsIn(req, maxBody)
      : [];
    if (perMinute && calls.length > 0) {
      const d = this.#rates.take(identity.name, perMinute);
      if (!d.ok) {
        (this.#o.metrics ?? telemetry).recordCall({
          tool: "(rate limited)",
          toolset: "",
          identity: identity.name,
          outcome: "denied",
          durationMs: 0,
        });
        const message = `Too many requests: "${identity.name}" may make ${perMinute} calls ` +
          `per minute (identities.${identity.name}.limits.per_minute); retry in ` +
          `${d.retryAfterSeconds} s`;
        this.#o.onRefused?.({
          identity: identity.name,
          workspace: identity.workspace,
          session: req.headers.get("mcp-session-id") ?? "(none)",
          calls,
          reason: "rate_limit",
          message,
        });
        return _jsonRpcError(429, message, { "Retry-After": String(d.retryAfterSeconds) });
      }
    }
    return { identity };
  }

  /**
   * The registry `identity`'s sessions see: its workspace's (the server's
   * `registry` when it is the server's), showing only its tools.
   */
  registryFor(registry: McpRegistry, identity: ResolvedIdentity): McpRegistry {
    if (identity.workspace !== this.#o.policy.serverWorkspace) {
      const own = this.#o.registries?.get(identity.workspace);
      if (!own) throw new Error(`no registry for the workspace of "${identity.name}"`);
      registry = own;
    }
    const hit = this.#views.get(identity.name);
    if (hit && hit.registry === registry) return hit.view;
    const view = identityRegistry(registry, identity, this.#running, this.#o.metrics);
    if (this.#views.size >= 10_000) this.#views.clear(); // many JWT subjects: views are cheap
    this.#views.set(identity.name, { registry, view });
    return view;
  }
}

/**
 * `registry` as `identity` sees it: only the tools it may use are listed
 * or callable (another is an unknown tool, with "did you mean" among its
 * own); at most `limits.concurrent` of its calls run at once; each call's
 * questions are capped; every call is traced and counted under its name.
 */
export function identityRegistry(
  registry: McpRegistry,
  identity: ResolvedIdentity,
  running: ConcurrencyLimiter = new ConcurrencyLimiter(),
  metrics: CorralMetrics = telemetry,
): McpRegistry {
  const { access, limits, name: who } = identity;
  const own = (): string[] => access.filter(registry.list()).map((t) => t.name);
  // identities.<name>.share_sandboxes: every session of it is one principal, whose
  // sandboxes close when the last session that called ends (or when idle).
  const shared = identity.shareSandboxes ? sharedPrincipal(who) : undefined;
  const calling = new Set<string>();
  return {
    loaded: () => access.filter(registry.loaded()),
    list: () => access.filter(registry.list()),
    // A session that ends closes its sandboxes through the view too.
    endPrincipal: (principal) => {
      if (shared === undefined) return registry.endPrincipal?.(principal) ?? Promise.resolve();
      calling.delete(principal);
      if (calling.size > 0) return Promise.resolve();
      return registry.endPrincipal?.(shared) ?? Promise.resolve();
    },
    // A refusal names who was refused, whatever the session said.
    auditRefusal: (name, args, options, reason, message) =>
      registry.auditRefusal?.(name, args, { ...options, identity: who }, reason, message) ??
        Promise.resolve(),
    unknownToolMessage: (name) => {
      const near = closestNames(name, own(), 3, Math.max(2, Math.floor(name.length / 3)));
      return `Unknown tool "${name}"` + (near.length ? ` (did you mean: ${near.join(", ")}?)` : "");
    },
    call: async (name, args, options = {}) => {
      const tool = registry.list().find((t) => t.name === name);
      if (!tool || !access.allows(tool)) {
        throw new TypeError(`Unknown tool "${name}"`);
      }
      const session = options.session ?? options.principal;
      if (shared !== undefined) {
        if (options.principal !== undefined && options.principal !== shared) {
          calling.add(options.principal);
        }
        options = { ...options, principal: shared, session };
      }
      const info = { tool: name, toolset: tool.toolset, identity: who, session };
      const release = limits.concurrent ? running.tryAcquire(who, limits.concurrent) : () => {};
      if (!release) {
        const message = `"${who}" already has ${limits.concurrent} calls running ` +
          `(identities.${who}.limits.concurrent); try again when one ends`;
        await registry.auditRefusal?.(name, args, { ...options, identity: who }, "limits", message)
          .catch(() => {});
        return await traceCall(
          info,
          () => Promise.resolve({ success: false, error: `Cannot run tool "${name}": ${message}` }),
          () => "denied",
          metrics,
        );
      }
      const budget = new AskBudget(limits);
      const onAsk = options.onAsk &&
        ((
          kind: Parameters<NonNullable<typeof options.onAsk>>[0],
          params: unknown,
          signal?: AbortSignal,
        ) => {
          const why = budget.take(kind === "sample" ? "sampling" : "elicitation");
          return why ? Promise.reject(new Error(why)) : options.onAsk!(kind, params, signal);
        });
      try {
        return await traceCall(
          info,
          // The audit line names who called (core/registry/call_audit.ts).
          () => registry.call(name, args, { ...options, identity: who, onAsk }),
          // The audit's outcome: failure (the tool's answer), error or denied (core/guard/audit.ts).
          outcomeOf,
          metrics,
        );
      } finally {
        release();
      }
    },
  };
}

/** The principal of an identity's sessions when they share sandboxes (and of its stateless calls). */
export function sharedPrincipal(identity: string): string {
  return `identity:${identity}`;
}

/**
 * The identity side of an HTTP server from corral.json: the default token
 * (the operator, `@operator`), the tokens file, the JWKS, the identities.
 * `--no-token` (no default token) cannot go with identities or a JWKS.
 */
export async function httpIdentityFromConfig(
  config: Pick<CorralConfig, "identities" | "auth">,
  options: {
    defaultToken?: string;
    serverWorkspace: string;
    /** The identity policy (default: made from `config` and `serverWorkspace`). */
    policy?: IdentityPolicy;
    metricsToken?: string;
    onScrape?: () => void;
    registries?: Map<string, McpRegistry>;
    onRefused?: (refused: RefusedCalls) => void;
  },
): Promise<HttpIdentity> {
  const team = Object.keys(config.identities).length > 0 || config.auth.jwks !== null;
  if (!options.defaultToken && team) {
    throw new ConfigError(
      "identities and auth.jwks in corral.json need the server's own token too (--token, " +
        "CORRAL_MCP_TOKEN, or on loopback the one corral makes): without it (--no-token) every " +
        'caller would be the operator ("@operator")',
    );
  }
  const authenticator = options.defaultToken
    ? new Authenticator({
      defaultToken: options.defaultToken,
      tokens: new TokenStore(config.auth.tokensFile),
      jwt: config.auth.jwks ? await JwtVerifier.create(config.auth.jwks) : undefined,
      operatorIdentities: config.auth.operatorIdentities,
    })
    : new Authenticator({});
  return new HttpIdentity({
    authenticator,
    policy: options.policy ?? teamPolicy(config, options.serverWorkspace),
    registries: options.registries,
    metricsToken: options.metricsToken,
    resource: config.auth.resource,
    authorizationServers: config.auth.authorizationServers,
    onScrape: options.onScrape,
    onRefused: options.onRefused,
  });
}

/** The identity policy of `config` for a server whose workspace is `serverWorkspace`. */
export function teamPolicy(
  config: Pick<CorralConfig, "identities" | "auth">,
  serverWorkspace: string,
): IdentityPolicy {
  return new IdentityPolicy(config.identities, {
    serverWorkspace,
    workspacesDir: config.auth.workspacesDir,
  });
}

/**
 * The `tools/call` requests a JSON-RPC body holds. A copy of the body is
 * read, at most `maxBytes` of it: a larger one holds none (the transport
 * refuses it whole).
 */
async function _callsIn(
  req: Request,
  maxBytes: number,
): Promise<Array<{ name: string; args: unknown }>> {
  if (!req.body) return [];
  const reader = req.clone().body!.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      // Not awaited: a tee branch's cancel settles only once the other branch is done too.
      reader.cancel().catch(() => {});
      return [];
    }
    chunks.push(value);
  }
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(_concat(chunks, size)));
  } catch {
    return []; // the transport answers a parse error
  }
  const list = (Array.isArray(body) ? body : [body]) as Array<
    { method?: unknown; params?: { name?: unknown; arguments?: unknown } } | null
  >;
  return list.filter((m) => m?.method === "tools/call").map((m) => ({
    name: String(m?.params?.name ?? ""),
    args: m?.params?.arguments ?? {},
  }));
}

function _concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function _jsonRpcError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return Response.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, {
    status,
    headers,
  });
}
