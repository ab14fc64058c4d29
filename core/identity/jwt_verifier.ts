/**
 * JWTs as bearer tokens: the signature checked against a JWKS (a file read
 * at start and again when it changes, or a URL fetched and cached by `jose`), `iss` and `aud` as
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
import { type AuthConfig, claimableIdentity, IDENTITY_NAME } from "../config/mod.ts";
import { ownedFileProblem } from "../base/mod.ts";
import { ConfigError } from "../tool/mod.ts";

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

/**
 * The JWKS file cannot be used now (unreadable, invalid, holding a private
 * key, or writable by others): every JWT is refused until it is fixed.
 * For the operator's log; the client gets a 500.
 */
export class JwksUnavailableError extends Error {
  /** Create the error. */
  constructor(message: string) {
    super(message);
    this.name = "JwksUnavailableError";
  }
}

/** Verifies JWTs against one JWKS. */
export class JwtVerifier {
  #keys: JWTVerifyGetKey;
  #settings: JwtSettings;
  /** The JWKS file's inode, size, mtime and mode when last read (file only). */
  #stamp = "";
  #fileError?: string;

  private constructor(keys: JWTVerifyGetKey, settings: JwtSettings) {
    this.#keys = keys;
    this.#settings = settings;
  }

  /**
   * A verifier for `settings`: the JWKS file is read now (a missing or
   * invalid one is a {@link ConfigError}) and again whenever its inode,
   * size, mtime or mode changes (checked at each verification), so that a
   * rotated key is seen by a running server; a URL is fetched on first use
   * and cached by `jose` (refetched every 10 minutes, and on a key id it
   * does not know at most once every 30 s, concurrent misses sharing one
   * fetch; `urlCooldownMs` changes the 30 s).
   */
  static async create(
    settings: JwtSettings,
    options: { urlCooldownMs?: number } = {},
  ): Promise<JwtVerifier> {
    if (settings.file) {
      const file = settings.file;
      const stamp = _stampOf(file);
      const keys = await _readJwksFile(file).catch((err) => {
        throw new ConfigError((err as Error).message);
      });
      const verifier = new JwtVerifier(keys, settings);
      verifier.#stamp = stamp;
      return verifier;
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
      createRemoteJWKSet(url, {
        timeoutDuration: 5000,
        cooldownDuration: options.urlCooldownMs ?? 30_000,
      }),
      settings,
    );
  }

  /** Read the JWKS file again when it changed; a bad one fails closed. */
  async #refreshFile(file: string): Promise<void> {
    const stamp = _stampOf(file);
    if (stamp !== this.#stamp) {
      try {
        this.#keys = await _readJwksFile(file);
        this.#fileError = undefined;
      } catch (err) {
        this.#fileError = (err as Error).message;
      }
      this.#stamp = stamp;
    }
    if (this.#fileError) {
      throw new JwksUnavailableError(`${this.#fileError}; every JWT is refused until it is fixed`);
    }
  }

  /**
   * The identity named by a valid `token`; else a {@link JwtRefusedError}
   * saying why, or a {@link JwksUnavailableError} when the JWKS file went bad.
   */
  async verify(token: string): Promise<string> {
    return (await this.verifyClaims(token)).identity;
  }

  /**
   * {@link verify}, with when the token was issued (`iat`, ms since the
   * epoch; 0 when it has none), for revocations.
   */
  async verifyClaims(token: string): Promise<{ identity: string; issuedAt: number }> {
    const s = this.#settings;
    if (s.file) await this.#refreshFile(s.file);
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
    if (!claimableIdentity(id)) {
      throw new JwtRefusedError(`invalid JWT: its "${s.claim}" claim "${id}" is a reserved name`);
    }
    return { identity: id, issuedAt: typeof payload.iat === "number" ? payload.iat * 1000 : 0 };
  }
}

/** The file's inode, size, mtime, mode and owner ("none" when it cannot be stat'ed). */
function _stampOf(file: string): string {
  try {
    // Synchronous: about 1 µs, where an async stat waits for a thread.
    const st = Deno.statSync(file);
    return `${st.ino}:${st.size}:${st.mtime?.getTime()}:${st.mode}:${st.uid}`;
  } catch {
    return "none";
  }
}

/**
 * Read and check a JWKS file: public keys only, owned by corral's user (or
 * root) and not writable by others (core/base/owned_file.ts), as the tokens
 * file: whoever can rewrite it can sign in as anyone.
 */
async function _readJwksFile(file: string): Promise<JWTVerifyGetKey> {
  let jwks: JSONWebKeySet;
  try {
    const problem = ownedFileProblem(file, await Deno.stat(file), { what: "it" });
    if (problem) throw new Error(problem.replace(/^it "[^"]*" /, ""));
    jwks = JSON.parse(await Deno.readTextFile(file));
  } catch (err) {
    throw new Error(
      `Cannot read the JWKS file "${file}" (auth.jwks.file): ${(err as Error).message}`,
    );
  }
  if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) {
    throw new Error(`the JWKS file "${file}" holds no "keys" (auth.jwks.file)`);
  }
  if (jwks.keys.some((k) => "d" in k || k.kty === "oct")) {
    throw new Error(
      `the JWKS file "${file}" holds a private or symmetric key: give public keys only`,
    );
  }
  return createLocalJWKSet(jwks);
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
