/**
 * Identities on the HTTP server: the routes that need none (the
 * protected-resource metadata, `/metrics` behind its own token), the
 * bearer token or JWT of every other request resolved to an identity
 * (401 with `WWW-Authenticate`, 403 for an identity the policy does not
 * admit; each counted and logged per client address, ./auth_failures.ts),
 * calls per minute per identity counted per call (429 with `Retry-After`;
 * ./_call_ticket.ts), the shared state that replicas count limits in
 * (core/identity/shared_state.ts; unreachable: 503), the revocation watch
 * (./_revocation_watch.ts), and the registry each identity's sessions see
 * (./_identity_registry.ts).
 *
 * @module
 */
import type { CorralConfig } from "../config/mod.ts";
import { escapeField } from "../audit/mod.ts";
import {
  Authenticator,
  IdentityPolicy,
  IdentityRefusedError,
  isProtectedResourcePath,
  JwtVerifier,
  LocalState,
  metadataUrl,
  protectedResourceMetadata,
  type ResolvedIdentity,
  resourceUrl,
  type SharedState,
  TokenStore,
  wwwAuthenticate,
} from "../identity/mod.ts";
import { type CorralMetrics, metricsResponse, telemetry } from "../telemetry/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { AuthFailures } from "./auth_failures.ts";
import { CallTicket } from "./_call_ticket.ts";
import { CLIENT_ADDRESS_HEADER } from "./_http_front.ts";
import { refuse } from "./_http_refusal.ts";
import { identityRegistry } from "./_identity_registry.ts";
import type { McpRegistry } from "./mcp_server.ts";
import { RevocationWatch } from "./_revocation_watch.ts";
import { revocableStream } from "./_revocable_stream.ts";

export { identityRegistry, sharedPrincipal } from "./_identity_registry.ts";

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
  /** Where the limits are counted (default: this replica's own, {@link LocalState}). */
  state?: SharedState;
  /** Failed authentication, counted and logged per address (default: logged on stderr). */
  failures?: AuthFailures;
  /** How often live work's credentials are checked again (default 1 s). */
  revocationCheckMs?: number;
}

/** A request that may go on: who sent it, with which credential. */
export interface Admitted {
  /** The identity's policy. */
  identity: ResolvedIdentity;
  /** The request's `Authorization` header (its work ends when it is revoked). */
  credential: string | null;
}

/** The identity side of one HTTP server. */
export class HttpIdentity {
  /** Where limits are counted: this replica, or every replica's Redis. */
  readonly state: SharedState;
  /** Ends the work of revoked credentials. */
  readonly watch: RevocationWatch;
  #o: HttpIdentityOptions;
  #failures: AuthFailures;
  #views = new Map<string, { registry: McpRegistry; view: McpRegistry }>();
  #gate?: { readonly waiting: number };

  /** The identity side for `options`. */
  constructor(options: HttpIdentityOptions) {
    this.#o = options;
    this.state = options.state ?? new LocalState();
    this.#failures = options.failures ??
      new AuthFailures({ metrics: options.metrics ?? telemetry });
    const auth = options.authenticator;
    this.watch = new RevocationWatch((a) => auth.authenticate(a), options.revocationCheckMs);
    // A revocation heard from any replica ends the work it covers now, not at the next round.
    this.state.onRevoked(() => void this.watch.check());
  }

  /** Whether requests carry tokens at all (false: `--no-token`). */
  get required(): boolean {
    return this.#o.authenticator.required;
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
   * Authenticate `req`: a Response to send back (401, 403, 500; 503 while
   * a shared state cannot be reached), or who it is. Refusals are counted
   * and logged per client address.
   */
  async admit(req: Request, mcpPath: string): Promise<Response | Admitted> {
    const credential = req.headers.get("authorization");
    const auth = await this.#o.authenticator.authenticate(credential);
    const source = req.headers.get(CLIENT_ADDRESS_HEADER) ?? "(unknown)";
    if (!auth.ok) {
      if (auth.detail) console.error(`corral: authentication: ${auth.detail}`);
      else this.#failures.record(source, auth.status, escapeField(auth.message, 200));
      const meta = metadataUrl(resourceUrl(req, mcpPath, this.#o.resource ?? null));
      return refuse(auth.status, auth.message, {
        "WWW-Authenticate": wwwAuthenticate(meta, auth.tokenSent ? auth.message : undefined),
      });
    }
    let identity: ResolvedIdentity;
    try {
      identity = this.#o.policy.resolve(auth.identity);
    } catch (err) {
      if (!(err instanceof IdentityRefusedError)) throw err;
      this.#failures.record(source, 403, escapeField(err.message, 200));
      return refuse(403, err.message);
    }
    if (
      identity.workspace !== this.#o.policy.serverWorkspace &&
      !this.#o.registries?.has(identity.workspace)
    ) {
      const message = `Forbidden: no workspace is open for "${identity.name}" ` +
        `(${identity.workspace}); name the identity in corral.json "identities" and restart the server`;
      this.#failures.record(source, 403, escapeField(message, 200));
      return refuse(403, message);
    }
    // Fail closed: with shared limits out of reach, no one is let through unlimited.
    const trouble = this.state.trouble;
    if (trouble) return refuse(503, `Service unavailable: ${trouble}; retry later`, _RETRY);
    return { identity, credential };
  }

  /**
   * Calls per minute: take one from `who`'s bucket for each of `calls`
   * (each call of a batch counts). Undefined when it has no such limit; a
   * ticket for what was granted (`granted` 0: answer 429 with its
   * `retryAfterSeconds`); a 503 when a shared state cannot be reached.
   */
  async takeCalls(who: Admitted, calls: number): Promise<CallTicket | Response | undefined> {
    const { name, limits } = who.identity;
    const perMinute = limits.perMinute;
    if (!perMinute || calls === 0) return undefined;
    let grant;
    try {
      grant = await this.state.takeCalls(name, perMinute, calls);
    } catch (err) {
      return refuse(503, `Service unavailable: ${(err as Error).message}; retry later`, _RETRY);
    }
    const message = `Too many requests: "${name}" may make ${perMinute} calls per minute ` +
      `(identities.${name}.limits.per_minute, counted in ${this.state.where}); retry in ` +
      `${grant.retryAfterSeconds} s`;
    if (grant.granted < calls) {
      (this.#o.metrics ?? telemetry).recordCall({
        tool: "(rate limited)",
        toolset: "",
        identity: name,
        outcome: "denied",
        durationMs: 0,
      });
    }
    return new CallTicket(grant.granted, message, grant.retryAfterSeconds);
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
    const view = identityRegistry(registry, identity, this.#o.metrics);
    if (this.#views.size >= 10_000) this.#views.clear(); // many JWT subjects: views are cheap
    this.#views.set(identity.name, { registry, view });
    return view;
  }

  /** Stop watching and report what was counted (the server closes). */
  close(): void {
    this.watch.close();
    this.#failures.flush();
  }
}

const _RETRY = { "Retry-After": "5" };

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
    /** Where limits are counted (default: this replica's own). */
    state?: SharedState;
    /** Failed authentication: counted and logged per address. */
    failures?: AuthFailures;
    /** How often live work's credentials are checked again (default 1 s). */
    revocationCheckMs?: number;
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
  const state = options.state ?? new LocalState();
  const authenticator = options.defaultToken
    ? new Authenticator({
      defaultToken: options.defaultToken,
      tokens: new TokenStore(config.auth.tokensFile),
      jwt: config.auth.jwks ? await JwtVerifier.create(config.auth.jwks) : undefined,
      operatorIdentities: config.auth.operatorIdentities,
      revokedAt: (name) => state.revokedAt(name),
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
    state,
    failures: options.failures,
    revocationCheckMs: options.revocationCheckMs,
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
