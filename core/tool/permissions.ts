/**
 * Permission letters: `r` read, `w` write, `x` execute (run), `n` network.
 *
 * @module
 */

/** One permission letter. */
export type Letter = "r" | "w" | "x" | "n";

/** Every letter, in canonical order. */
export const LETTERS: readonly Letter[] = ["r", "w", "x", "n"];

/** What each letter lets a tool do, for messages and docs. */
export const LETTER_NAMES: Readonly<Record<Letter, string>> = {
  r: "read",
  w: "write",
  x: "run",
  n: "net",
};

/** The Deno flag that backs each letter. */
export const LETTER_FLAGS: Readonly<Record<Letter, string>> = {
  r: "--allow-read",
  w: "--allow-write",
  x: "--allow-run",
  n: "--allow-net",
};

/**
 * Parse and canonicalise a permission string such as `"wr"` into `"rw"`.
 * Throws a `TypeError` naming the tool and the bad letter.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePermissions } from "./permissions.ts";
 * assert.ok(parsePermissions("wr", "MoveFile") === "rw");
 * assert.ok(parsePermissions(undefined, "Echo") === "");
 * ```
 */
export function parsePermissions(value: unknown, tool: string): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") {
    throw new TypeError(
      `Tool "${tool}": permissions must be a string of the letters r, w, x, n, got ${typeof value}`,
    );
  }
  const seen = new Set<string>();
  for (const ch of value) {
    if (!(LETTERS as readonly string[]).includes(ch)) {
      throw new TypeError(
        `Tool "${tool}": unknown permission letter "${ch}" in "${value}" (allowed: r, w, x, n)`,
      );
    }
    seen.add(ch);
  }
  return LETTERS.filter((l) => seen.has(l)).join("");
}

/** The letters of `a` that are missing from `b`, canonical order. */
export function missingLetters(a: string, b: string): string {
  return LETTERS.filter((l) => a.includes(l) && !b.includes(l)).join("");
}
