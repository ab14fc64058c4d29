/**
 * SHA-256 in hex, synchronously: one function for every hash corral records
 * or compares (audit lines, tokens, trusted project files, lock names, PyPI
 * installs), computed by `@noble/hashes` (audited, no dependencies).
 *
 * Loading it costs a start a few milliseconds, where `node:crypto` costs
 * tens (Deno's Node crypto layer; bench/analysis.md, "Issue 31"), so short
 * inputs, the common case of a start (a lock name, a project file), never
 * load `node:crypto`. It hashes large inputs several times faster, though:
 * whoever hashes much or large data (the audit log's large arguments, a
 * venv's files, a PyPI download) first calls {@link useNativeSha256}, and
 * from then on the same function hashes natively.
 *
 * @module
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

let _createHash: typeof import("node:crypto").createHash | undefined;
let _loading: Promise<void> | undefined;

/** Load `node:crypto` for what follows (many or large inputs); once per process. */
export function useNativeSha256(): Promise<void> {
  return _loading ??= import("node:crypto").then((m) => {
    _createHash = m.createHash;
  });
}

/**
 * SHA-256 of `data` (a string is hashed as UTF-8), as 64 hex digits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256Hex, useNativeSha256 } from "./sha256_hex.ts";
 * assert.equal(sha256Hex(""), sha256Hex(new Uint8Array()));
 * assert.ok(sha256Hex("").startsWith("e3b0c442"));
 * const before = [sha256Hex("abc"), sha256Hex("é→𝄞")];
 * await useNativeSha256();
 * assert.deepEqual([sha256Hex("abc"), sha256Hex("é→𝄞")], before);
 * assert.equal(before[0], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
 * ```
 */
export function sha256Hex(data: string | Uint8Array): string {
  if (_createHash) return _createHash("sha256").update(data).digest("hex");
  return bytesToHex(sha256(typeof data === "string" ? utf8ToBytes(data) : data));
}
