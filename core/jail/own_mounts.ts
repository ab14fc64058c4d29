/**
 * The namespace's own `/proc`, `/dev`, `/tmp` (with HOME) and an empty
 * read-only `/sys`: mounted first, and again after any grant that covers
 * them (`/`, `/proc`, …), so that nothing of the host's is ever seen there.
 *
 * @module
 */
import { isWithin } from "../base/mod.ts";

/** HOME inside the namespace: a directory on its private /tmp. */
export const NAMESPACE_HOME = "/tmp/home";

/** The own mounts, in the order bwrap makes them. */
export const OWN_MOUNTS: readonly (readonly string[])[] = [
  ["--proc", "/proc"],
  ["--dev", "/dev"],
  ["--tmpfs", "/sys", "--remount-ro", "/sys"],
  ["--tmpfs", "/tmp", "--dir", NAMESPACE_HOME],
];

/** Folders of the host that are never bound, nor anything inside them. */
export const OWN_ROOTS: readonly string[] = ["/proc", "/dev", "/sys"];

/**
 * The own mounts inside `p` (a path just bound from the grant), made again
 * over it (the runtime's files on the new /tmp are bound again after them:
 * ./namespace_runtime.ts `runtimeAgain`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownAgain } from "./own_mounts.ts";
 * assert.ok(ownAgain("/").includes("/proc"));
 * assert.deepEqual(ownAgain("/ws"), []);
 * ```
 */
export function ownAgain(p: string): string[] {
  return OWN_MOUNTS.filter((m) => isWithin(m[1], p)).flat();
}

/**
 * Whether a mount of `m` shows `p`: `p` is inside `m` and not inside an own
 * mount that `m` covers (those are mounted again over it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reaches } from "./own_mounts.ts";
 * assert.ok(reaches("/ws/a", "/ws") && !reaches("/tmp/x", "/") && reaches("/tmp/x", "/tmp/x"));
 * ```
 */
export function reaches(p: string, m: string): boolean {
  return isWithin(p, m) &&
    ![...OWN_ROOTS, "/tmp"].some((o) => isWithin(p, o) && (m === o || !isWithin(m, o)));
}
