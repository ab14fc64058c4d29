/**
 * Domain errors of corral. Bad input uses the built-in `TypeError`, limits
 * use `RangeError`; these few cover what the built-ins do not.
 *
 * @module
 */

/**
 * A tool asked for something its grant does not hold.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PermissionDeniedError } from "./errors.ts";
 * const err = new PermissionDeniedError('Cannot run tool "ReadFile": path "/etc" is outside the granted roots');
 * assert.ok(err.name === "PermissionDeniedError");
 * ```
 */
export class PermissionDeniedError extends Error {
  /** Create the error; `cause` keeps the underlying error, if any. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PermissionDeniedError";
  }
}

/**
 * A tool call ran past its time limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ToolTimeoutError } from "./errors.ts";
 * const err = new ToolTimeoutError("Sleep", 100);
 * assert.ok(err.message === 'Cannot run tool "Sleep": timed out after 100 ms');
 * ```
 */
export class ToolTimeoutError extends Error {
  /** The limit that was exceeded, in milliseconds. */
  readonly timeoutMs: number;
  /** Create the error for tool `tool` and its limit in milliseconds. */
  constructor(tool: string, timeoutMs: number, options?: ErrorOptions) {
    super(`Cannot run tool "${tool}": timed out after ${timeoutMs} ms`, options);
    this.name = "ToolTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The configuration (permissions.json, corral.json, a plugin file) is invalid.
 * The message names the file and the key path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigError } from "./errors.ts";
 * const err = new ConfigError("permissions.json: toolsets.files.read[0]: Expected string, received number");
 * assert.ok(err.name === "ConfigError");
 * ```
 */
export class ConfigError extends Error {
  /** Create the error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ConfigError";
  }
}

/**
 * The credential a call's session was opened with was revoked (or expired)
 * while the call ran: the reason of the abort that stops it, so the audit
 * says `denied` / `revoked` rather than a caller's cancellation.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CredentialRevokedError } from "./errors.ts";
 * const err = new CredentialRevokedError("alice");
 * assert.match(err.message, /"alice" was revoked/);
 * ```
 */
export class CredentialRevokedError extends Error {
  /** Create the error for `identity`'s revoked credential. */
  constructor(identity: string, options?: ErrorOptions) {
    super(`the token of "${identity}" was revoked (or expired) while the call ran`, options);
    this.name = "CredentialRevokedError";
  }
}
