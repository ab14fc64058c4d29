/**
 * Files that decide who a caller is (the tokens file, a JWKS file, the
 * server's own token, the config that names identities) are trusted only
 * when no one else can change them: owned by the user corral runs as (or by
 * root, who can change anything anyway), and not writable by group or
 * others; a secret one not readable by them either.
 *
 * @module
 */

/** How strict {@link ownedFileProblem} is. */
export interface OwnedFileRules {
  /** What the file is, for messages: `tokens file`, `JWKS file (auth.jwks.file)`. */
  what: string;
  /** Secret: group and others may not read it either (mode 0600 or stricter). */
  secret?: boolean;
  /** Accept a file owned by root besides one owned by corral's user (default true). */
  rootOwned?: boolean;
  /** corral's uid (default `Deno.uid()`). */
  uid?: number | null;
}

/**
 * Why `st` (the stat of `file`) may not decide identities, or undefined
 * when it may: not a regular file, owned by another user, writable (or for
 * a secret, readable) by group or others. The message names the file, its
 * owner or mode, and the command that fixes it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownedFileProblem } from "./owned_file.ts";
 * const st = { isFile: true, mode: 0o100666, uid: 1000 } as Deno.FileInfo;
 * assert.match(ownedFileProblem("/k.json", st, { what: "JWKS file", uid: 1000 })!, /chmod go-w/);
 * const theirs = { isFile: true, mode: 0o100644, uid: 1001 } as Deno.FileInfo;
 * assert.match(ownedFileProblem("/k.json", theirs, { what: "JWKS file", uid: 1000 })!, /uid 1001/);
 * const ok = { isFile: true, mode: 0o100644, uid: 1000 } as Deno.FileInfo;
 * assert.equal(ownedFileProblem("/k.json", ok, { what: "JWKS file", uid: 1000 }), undefined);
 * ```
 */
export function ownedFileProblem(
  file: string,
  st: Deno.FileInfo,
  rules: OwnedFileRules,
): string | undefined {
  const { what } = rules;
  if (!st.isFile) return `${what} "${file}" is not a regular file`;
  const uid = rules.uid === undefined ? Deno.uid() : rules.uid;
  const owner = st.uid;
  if (
    uid !== null && owner !== null && owner !== uid && !(owner === 0 && rules.rootOwned !== false)
  ) {
    return `${what} "${file}" belongs to uid ${owner}, not to corral's user (uid ${uid})` +
      `${rules.rootOwned === false ? "" : " or root"}: another user could rewrite it; ` +
      `chown ${uid} "${file}"`;
  }
  const mode = (st.mode ?? 0) & 0o777;
  if (rules.secret && mode & 0o077) {
    return `${what} "${file}" may be read or written by others (mode ${mode.toString(8)}): ` +
      `run chmod 600 "${file}"`;
  }
  if (mode & 0o022) {
    return `${what} "${file}" may be written by others (mode ${mode.toString(8)}): ` +
      `run chmod go-w "${file}"`;
  }
  return undefined;
}
