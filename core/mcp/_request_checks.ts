/**
 * The checks every HTTP request passes before any session or sandbox sees
 * it, in this order: Host and Origin (403, ./_rebinding_guard.ts), who calls
 * (identities: ./http_identity.ts, which also routes its own endpoints;
 * else the bearer token, 401, ./_bearer_check.ts), the path (404), the body
 * size (413).
 *
 * @module
 */
import { bearerCheck } from "./_bearer_check.ts";
import { refuse } from "./_http_refusal.ts";
import type { Admitted, HttpIdentity } from "./http_identity.ts";
import { rebindingGuard } from "./_rebinding_guard.ts";

/** What the checks need to know. */
export interface RequestCheckOptions {
  /** The server is bound to a loopback address. */
  loopback: boolean;
  /** The server's own token (without identities). */
  token?: string;
  /** Identities: they replace the token check. */
  team?: HttpIdentity;
  /** The MCP endpoint's path. */
  path: string;
  /** Largest request body in bytes. */
  maxBody: number;
  /** Browser origins allowed besides loopback ones. */
  allowedOrigins?: string[];
}

/** A request that passed: with identities, who it is. */
export interface Caller {
  who?: Admitted;
}

/** The checks: a refusal (or an answer of the identities' own endpoints), else the caller. */
export function requestChecks(
  options: RequestCheckOptions,
): (req: Request) => Promise<Response | Caller> {
  const { team, path, maxBody } = options;
  const rebinding = rebindingGuard(options.loopback, options.allowedOrigins);
  const bearer = bearerCheck(options.token);
  return async (req) => {
    const forbidden = rebinding(req);
    if (forbidden) return forbidden;
    let who: Admitted | undefined;
    if (team) {
      const answered = await team.route(req, path) ?? await team.admit(req, path);
      if (answered instanceof Response) return answered;
      who = answered;
    } else {
      const unauthorized = bearer(req);
      if (unauthorized) return unauthorized;
    }
    if (new URL(req.url).pathname !== path) {
      return refuse(404, `Not found: the endpoint is ${path}`);
    }
    const length = Number(req.headers.get("content-length") ?? "0");
    if (length > maxBody) {
      return refuse(413, `Payload too large: ${length} bytes, limit ${maxBody} (--max-body)`);
    }
    return { who };
  };
}
