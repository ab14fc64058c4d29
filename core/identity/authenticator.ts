/**
 * Who is calling: the bearer token of a request resolved to an identity
 * name. The server's own token (`--token`, `mcp-token`) is the operator, a
 * role of its own (`@operator`, which no token name or claim value can be);
 * a static token from the tokens file names its own identity; a JWT is
 * verified against the JWKS and names the identity in its configured
 * claim. A name becomes the operator only when the operator lists it
 * (`auth.operator_identities`). Without any token configured
 * (`--no-token`), every request is the operator.
 *
 * @module
 */
import { OPERATOR_IDENTITY } from "../config/mod.ts";
import {
  JwksUnavailableError,
  JwtRefusedError,
  type JwtVerifier,
  looksLikeJwt,
} from "./jwt_verifier.ts";
import { constantTimeEqual, type TokenStore } from "./token_store.ts";

/** How the identity was established. */
export type AuthMethod = "default" | "token" | "jwt" | "none";

/** The answer of {@link Authenticator.authenticate}. */
export type AuthResult =
  | { ok: true; identity: string; method: AuthMethod }
  | {
    ok: false;
    status: 401 | 500;
    /** For the client. */
    message: string;
    tokenSent: boolean;
    /** For the operator's log (500 only). */
    detail?: string;
  };

/** The ways a request may authenticate. */
export interface AuthenticatorOptions {
  /** The server's own token: the identity `default`. */
  defaultToken?: string;
  /** Static tokens, each naming an identity. */
  tokens?: TokenStore;
  /** JWT verification. */
  jwt?: JwtVerifier;
  /**
   * Names (token names, claim values) that are the operator: listed by the
   * operator (`auth.operator_identities`); no other name ever is.
   */
  operatorIdentities?: string[];
  /**
   * When `name` was revoked (ms since the epoch; ./shared_state.ts): its
   * static token made, and its JWTs issued (`iat`), no later are refused.
   */
  revokedAt?: (name: string) => number | undefined;
}

/** Resolves `Authorization` headers to identities. */
export class Authenticator {
  #default?: Uint8Array;
  #tokens?: TokenStore;
  #jwt?: JwtVerifier;
  #operators: Set<string>;
  #revokedAt?: (name: string) => number | undefined;

  /**
   * An authenticator for the configured ways.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Authenticator } from "./authenticator.ts";
   * const auth = new Authenticator({ defaultToken: "s3cret" });
   * assert.deepEqual(await auth.authenticate("Bearer s3cret"), {
   *   ok: true,
   *   identity: "@operator",
   *   method: "default",
   * });
   * assert.equal((await auth.authenticate("Bearer default")).ok, false);
   * ```
   */
  constructor(options: AuthenticatorOptions) {
    this.#default = options.defaultToken
      ? new TextEncoder().encode(options.defaultToken)
      : undefined;
    this.#tokens = options.tokens;
    this.#jwt = options.jwt;
    this.#operators = new Set(options.operatorIdentities ?? []);
    this.#revokedAt = options.revokedAt;
  }

  /** Whether any token is required (false: `--no-token`, everyone is `default`). */
  get required(): boolean {
    return Boolean(this.#default || this.#tokens || this.#jwt);
  }

  /**
   * The identity of a request's `Authorization` header. A tokens file that
   * cannot be read (or is readable by others) refuses every static token,
   * and a JWKS file that went bad every JWT, with status 500 (fail closed).
   */
  async authenticate(authorization: string | null): Promise<AuthResult> {
    if (!this.required) return { ok: true, identity: OPERATOR_IDENTITY, method: "none" };
    const m = /^Bearer +([\x21-\x7e]+) *$/i.exec(authorization ?? "");
    if (!m) {
      return {
        ok: false,
        status: 401,
        message: "Unauthorized: send Authorization: Bearer <token>",
        tokenSent: authorization !== null,
      };
    }
    const token = m[1];
    if (this.#default && constantTimeEqual(new TextEncoder().encode(token), this.#default)) {
      return { ok: true, identity: OPERATOR_IDENTITY, method: "default" };
    }
    if (this.#jwt && looksLikeJwt(token)) {
      try {
        const { identity, issuedAt } = await this.#jwt.verifyClaims(token);
        return this.#issued(identity, issuedAt, "jwt");
      } catch (err) {
        if (err instanceof JwksUnavailableError) return _cannotCheck("JWTs", err.message);
        if (!(err instanceof JwtRefusedError)) throw err;
        return { ok: false, status: 401, message: `Unauthorized: ${err.message}`, tokenSent: true };
      }
    }
    if (this.#tokens) {
      let entry: Awaited<ReturnType<TokenStore["entryOf"]>>;
      try {
        entry = await this.#tokens.entryOf(token);
      } catch (err) {
        return _cannotCheck("tokens", (err as Error).message);
      }
      if (entry) return this.#issued(entry.name, Date.parse(entry.created) || 0, "token");
    }
    return {
      ok: false,
      status: 401,
      message: "Unauthorized: the token is not valid (unknown or revoked)",
      tokenSent: true,
    };
  }

  /** `name`'s credential issued at `issuedAt`: refused when revoked since, else who it is. */
  #issued(name: string, issuedAt: number, method: AuthMethod): AuthResult {
    const revoked = this.#revokedAt?.(name);
    if (revoked !== undefined && !(issuedAt > revoked)) {
      return {
        ok: false,
        status: 401,
        message: "Unauthorized: the token was revoked",
        tokenSent: true,
      };
    }
    return { ok: true, identity: this.#named(name), method };
  }

  /** The operator when the operator listed `name`; else `name` itself. */
  #named(name: string): string {
    return this.#operators.has(name) ? OPERATOR_IDENTITY : name;
  }
}

/** Fail closed: a 500 for the client, the reason for the operator's log. */
function _cannotCheck(what: string, detail: string): AuthResult {
  return {
    ok: false,
    status: 500,
    message: `Internal error: the server cannot check ${what} now (see its log)`,
    tokenSent: true,
    detail,
  };
}
