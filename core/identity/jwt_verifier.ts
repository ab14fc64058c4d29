/**
 * JWTs as bearer tokens: the signature checked against a JWKS (a file read
 * at start, or a URL fetched and cached by `jose`), `iss` and `aud` as
 * configured, `exp` required and `exp`/`nbf` checked with a small clock
 * skew. The identity is a configured claim (default `sub`).
 *
 * @module
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type JSONWebKeySet,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import { IDENTITY_NAME } from "../config/team_config.ts";
import type { AuthConfig } from "../config/team_config.ts";
import { ConfigError } from "../tool/errors.ts";

/** JWT settings: `auth.jwks` of corral.json, resolved. */
export type JwtSettings = NonNullable<AuthConfig["jwks"]>;

/** Why a JWT was refused (the text is safe to send back to the client). */
export class JwtRefusedError extends Error {
  /** Create the error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "JwtRefusedError";
  }
}

/** Asymmetric algorithms only: a JWKS holds public keys (no `none`, no HMAC). */
const _ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"]
  .concat(["ES512", "EdDSA", "Ed25519"]);

/** True when `token` has the shape of a compact JWS (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/** Verifies JWTs against one JWKS. */
export class JwtVerifier {
  #keys: JWTVerifyGetKey;
  #settings: JwtSettings;

  private constructor(keys: JWTVerifyGetKey, settings: JwtSettings) {
    this.#keys = keys;
    this.#settings = settings;
  }

  /**
   * A verifier for `settings`: the JWKS file is read now (a missing or
   * invalid one is a {@link ConfigError}); a URL is fetched on first use and
   * cached (refetched at most every 30 s when an unknown key id shows up).
   */
  static async create(settings: JwtSettings): Promise<JwtVerifier> {
    if (settings.file) {
      let jwks: JSONWebKeySet;
      try {
        jwks = JSON.parse(await Deno.readTextFile(settings.file));
      } catch (err) {
        throw new ConfigError(
          `Cannot read the JWKS file "${settings.file}" (auth.jwks.file): ${
            (err as Error).message
          }`,
        );
      }
      if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) {
        throw new ConfigError(`the JWKS file "${settings.file}" holds no "keys" (auth.jwks.file)`);
      }
      if (jwks.keys.some((k) => "d" in k || k.kty === "oct")) {
        throw new ConfigError(
          `the JWKS file "${settings.file}" holds a private or symmetric key: give public keys only`,
        );
      }
      return new JwtVerifier(createLocalJWKSet(jwks), settings);
    }
    if (!settings.url) throw new ConfigError("auth.jwks needs a file or a url");
    const url = new URL(settings.url);
    if (url.protocol !== "https:" && !/^(localhost|127\.[\d.]+|\[::1\])$/.test(url.hostname)) {
      throw new ConfigError(
        `auth.jwks.url must be https (or loopback), got "${settings.url}": keys fetched in the ` +
          "clear could be replaced on the way",
      );
    }
    return new JwtVerifier(
      createRemoteJWKSet(url, { timeoutDuration: 5000, cooldownDuration: 30_000 }),
      settings,
    );
  }

  /** The identity named by a valid `token`; else a {@link JwtRefusedError} saying why. */
  async verify(token: string): Promise<string> {
    const s = this.#settings;
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.#keys, {
        audience: s.audience,
        issuer: s.issuer,
        clockTolerance: s.clockSkewSeconds,
        algorithms: _ALGORITHMS,
        requiredClaims: ["exp"],
      }));
    } catch (err) {
      throw new JwtRefusedError(`invalid JWT: ${_reason(err as Error)}`, { cause: err });
    }
    const id = payload[s.claim];
    if (typeof id !== "string" || !IDENTITY_NAME.test(id)) {
      throw new JwtRefusedError(
        `invalid JWT: its "${s.claim}" claim is not an identity name (letters, digits, . _ @ : | + -)`,
      );
    }
    return id;
  }
}

function _reason(err: Error): string {
  const code = (err as { code?: string }).code ?? "";
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "it has expired";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "the signature does not match";
    case "ERR_JWKS_NO_MATCHING_KEY":
      return "no key of the JWKS matches it";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return err.message; // names the claim: "aud", "iss", "nbf"
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "its algorithm is not allowed";
    default:
      return code ? `${code}: ${err.message}` : "it is malformed";
  }
}
