/**
 * Bounds on what one audit line holds: no caller can make corral write a
 * huge line (a 500 KB tool name, a 30 KB header) or bury the log. Every
 * string field is cut to a length, the error text to a longer one, and a
 * line that is still too large is written as a bounded copy.
 *
 * @module
 */

/** Longest string field of a line (tool, identity, session, reason, …), in UTF-16 units. */
export const AUDIT_FIELD_CAP = 256;
/** Longest `error` text of a line. */
export const AUDIT_ERROR_CAP = 2048;
/** Longest line: beyond it the record is written as a bounded copy. */
export const AUDIT_LINE_CAP = 64 * 1024;

/**
 * `text` cut to `max` characters, with how much was left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capText } from "./audit_caps.ts";
 * assert.equal(capText("abcdef", 3), "abc…[+3 chars]");
 * assert.equal(capText("abc", 3), "abc");
 * ```
 */
export function capText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[+${text.length - max} chars]`;
}

/**
 * A copy of `record` whose top-level strings are capped ({@link AUDIT_FIELD_CAP},
 * `error` {@link AUDIT_ERROR_CAP}); the keys of its `tools` map (a
 * refusals line) too. Nested values (arguments, their shape) are bounded
 * where they are made (./audit_json.ts, ./audit_shape.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capFields } from "./audit_caps.ts";
 * const r = capFields({ tool: "x".repeat(500_000), n: 1 });
 * assert.ok((r.tool as string).length < 300 && r.n === 1);
 * ```
 */
export function capFields(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (typeof value === "string") {
      out[key] = capText(value, key === "error" ? AUDIT_ERROR_CAP : AUDIT_FIELD_CAP);
    } else if (key === "tools" && value && typeof value === "object" && !Array.isArray(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [capText(k, AUDIT_FIELD_CAP), v]),
      );
    } else out[key] = value;
  }
  return out;
}
