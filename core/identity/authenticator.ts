/**
 * Who is calling: the bearer token of a request resolved to an identity
 * name. The server's own token (`--token`, `mcp-token`) is the identity
 * `default`; a static token from the tokens file names its own; a JWT is
 * verified against the JWKS and names the identity in its configured
 * claim. Without any of them configured (`--no-token`), every request is
 * `default`.
 *
 * @module
 */
import { DEFAULT_IDENTITY } from "../config/team_config.ts";
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
}

/** Resolves `Authorization` headers to identities. */
export class Authenticator {
  #default?: Uint8Array;
  #tokens?: TokenStore;
  #jwt?: JwtVerifier;

  /** An authenticator for the configured ways. */
  constructor(options: AuthenticatorOptions) {
    this.#default = options.defaultToken
      ? new TextEncoder().encode(options.defaultToken)
      : undefined;
    this.#tokens = options.tokens;
    this.#jwt = options.jwt;
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
    if (!this.required) return { ok: true, identity: DEFAULT_IDENTITY, method: "none" };
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
      return { ok: true, identity: DEFAULT_IDENTITY, method: "default" };
    }
    if (this.#jwt && looksLikeJwt(token)) {
      try {
        return { ok: true, identity: await this.#jwt.verify(token), method: "jwt" };
      } catch (err) {
        if (err instanceof JwksUnavailableError) return _cannotCheck("JWTs", err.message);
        if (!(err instanceof JwtRefusedError)) throw err;
        return { ok: false, status: 401, message: `Unauthorized: ${err.message}`, tokenSent: true };
      }
    }
    if (this.#tokens) {
      let name: string | null;
      try {
        name = await this.#tokens.identityOf(token);
      } catch (err) {
        return _cannotCheck("tokens", (err as Error).message);
      }
      if (name) return { ok: true, identity: name, method: "token" };
    }
    return {
      ok: false,
      status: 401,
      message: "Unauthorized: the token is not valid (unknown or revoked)",
      tokenSent: true,
    };
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
