/**
 * Modes as the tree had them: a change never gives group or other a write
 * bit that the tree's file or folder did not give them (for a new path,
 * one that the user's umask does not give), and never sets setuid, setgid
 * or sticky, except setgid and sticky that the tree's folder already had.
 * A wider mode is masked, not refused: the change is applied with the
 * narrower mode, and the change list names it (`masked`, ./change_report.ts).
 * The write root's own mode is never applied (it is not a change of the
 * layer's entries).
 *
 * @module
 */

/** What the tree holds at a path, for its mode. */
export interface TreeMode {
  dir: boolean;
  mode: number;
}

/**
 * The mode to apply for a change asking `asked` (a folder when `dir`), over
 * what the tree holds there (`tree`, null when nothing or another kind),
 * under the user's `umask`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { maskedMode } from "./_mode_rules.ts";
 * assert.equal(maskedMode(0o777, false, { dir: false, mode: 0o644 }, 0o022), 0o755);
 * assert.equal(maskedMode(0o1777, true, { dir: true, mode: 0o755 }, 0o022), 0o755);
 * assert.equal(maskedMode(0o664, false, { dir: false, mode: 0o664 }, 0o022), 0o664);
 * assert.equal(maskedMode(0o4755, false, null, 0o002), 0o755);
 * assert.equal(maskedMode(0o775, true, null, 0o002), 0o775);
 * assert.equal(maskedMode(0o3775, true, { dir: true, mode: 0o2775 }, 0o022), 0o2775);
 * ```
 */
export function maskedMode(
  asked: number,
  dir: boolean,
  tree: TreeMode | null,
  umask: number,
): number {
  const same = tree !== null && tree.dir === dir;
  const groupOther = same ? tree.mode & 0o022 : 0o022 & ~umask;
  const special = same && dir ? tree.mode & 0o3000 : 0;
  return (asked & 0o755) | (asked & groupOther) | (asked & special);
}

/**
 * The sentence the change list gives a masked mode.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { maskedWhy } from "./_mode_rules.ts";
 * assert.match(maskedWhy(0o777, 0o755), /^mode 0777 masked to 0755/);
 * ```
 */
export function maskedWhy(asked: number, applied: number): string {
  const o = (m: number) => `0${(m & 0o7777).toString(8).padStart(3, "0")}`;
  return `mode ${o(asked)} masked to ${o(applied)}: no write for group or other beyond what ` +
    `the tree (or the user's umask) gave, no setuid, setgid or sticky bit`;
}

let _umask: number | undefined;

/** The user's umask (this process's), read once. */
export function userUmask(): number {
  if (_umask === undefined) {
    try {
      _umask = Deno.umask();
    } catch {
      _umask = 0o022;
    }
  }
  return _umask;
}
