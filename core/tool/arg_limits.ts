/**
 * Limits on a call's arguments: how deep they nest and how large they are
 * as JSON. Measured iteratively (never recursion), stopping at the first
 * limit passed, so a 10,000-level or 50 MB argument costs no more than the
 * limit to refuse.
 *
 * @module
 */

/** Default of the policy's `max_arg_depth`: nesting levels of objects and arrays. */
export const DEFAULT_MAX_ARG_DEPTH = 64;
/** Default of the policy's `max_arg_bytes`: 4 MiB as JSON. */
export const DEFAULT_MAX_ARG_BYTES = 4 * 1024 * 1024;

/** What {@link measureArgs} found. */
export interface ArgMeasure {
  /** The deepest nesting seen (1 for `{}`; 0 for a plain value). */
  depth: number;
  /** The size as JSON (UTF-8 bytes), counted up to the first limit passed. */
  bytes: number;
  /** Which limit was passed, if one was. */
  over?: "depth" | "bytes";
}

/**
 * Measure `value` as JSON against `maxDepth` and `maxBytes`, without
 * recursion; stops at the first limit passed. A cycle passes the depth
 * limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { measureArgs } from "./arg_limits.ts";
 * let deep: unknown = 1;
 * for (let i = 0; i < 10_000; i++) deep = { a: deep };
 * assert.ok(measureArgs(deep, 64, 1e6).over === "depth");
 * assert.ok(measureArgs({ a: "xy" }, 64, 1e6).bytes === 10);
 * ```
 */
export function measureArgs(value: unknown, maxDepth: number, maxBytes: number): ArgMeasure {
  const stack: Array<[unknown, number]> = [[value, 0]];
  let depth = 0;
  let bytes = 0;
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v === "string") bytes += _utf8Length(v, maxBytes - bytes) + 2;
    else if (v === null || typeof v !== "object") bytes += _plainLength(v);
    else {
      const level = d + 1;
      if (level > depth) depth = level;
      if (level > maxDepth) return { depth, bytes, over: "depth" };
      bytes += 2;
      // Separators: a comma between items, quotes and a colon around each key.
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          if (i > 0) bytes += 1;
          stack.push([v[i], level]);
          if (bytes > maxBytes) return { depth, bytes, over: "bytes" };
        }
      } else {
        let first = true;
        for (const key in v) {
          if (!Object.hasOwn(v, key)) continue;
          bytes += _utf8Length(key, maxBytes - bytes) + (first ? 3 : 4);
          first = false;
          stack.push([(v as Record<string, unknown>)[key], level]);
          if (bytes > maxBytes) return { depth, bytes, over: "bytes" };
        }
      }
    }
    if (bytes > maxBytes) return { depth, bytes, over: "bytes" };
  }
  return { depth, bytes };
}

/** The policy keys behind the limits, for {@link argLimitRefusal}. */
export interface ArgLimitPolicy {
  max_arg_depth?: number;
  max_arg_bytes?: number;
  /** Where the entry is, for the message: `toolsets.files`. */
  where?: string;
  /** A plugin's own key when it is served by `plugins.default`. */
  own?: string;
  /** The permissions.json to edit (default: named as `permissions.json`). */
  file?: string;
}

/**
 * Why `args` may not run under `policy`'s limits (a sentence naming the
 * limit and its policy key), or undefined when they are within them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { argLimitRefusal } from "./arg_limits.ts";
 * const why = argLimitRefusal({ s: "x".repeat(2000) }, { max_arg_bytes: 1024, where: "toolsets.files" });
 * assert.match(why ?? "", /max_arg_bytes/);
 * assert.ok(argLimitRefusal({ s: "x" }, {}) === undefined);
 * ```
 */
export function argLimitRefusal(args: unknown, policy: ArgLimitPolicy): string | undefined {
  const maxDepth = policy.max_arg_depth ?? DEFAULT_MAX_ARG_DEPTH;
  const maxBytes = policy.max_arg_bytes ?? DEFAULT_MAX_ARG_BYTES;
  const m = measureArgs(args ?? null, maxDepth, maxBytes);
  if (!m.over) return undefined;
  const entry = policy.own ?? policy.where ?? "defaults";
  const file = policy.file ?? "permissions.json";
  return m.over === "depth"
    ? `arguments too deep: nested more than ${maxDepth} levels (the limit "max_arg_depth" ` +
      `is set in ${entry} or defaults of ${file})`
    : `arguments too large: more than ${maxBytes} bytes as JSON (the limit "max_arg_bytes" ` +
      `is set in ${entry} or defaults of ${file})`;
}

/** UTF-8 length of `s`, counted only up to a little past `budget`. */
function _utf8Length(s: string, budget: number): number {
  // UTF-8 never takes fewer bytes than UTF-16 code units: a long string is over at once.
  if (s.length > budget) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
    if (c === 0x22 || c === 0x5c || c < 0x20) n += 1; // escaped in JSON
  }
  return n;
}

function _plainLength(v: unknown): number {
  if (typeof v === "number") return Number.isFinite(v) ? String(v).length : 4;
  if (typeof v === "boolean") return v ? 4 : 5;
  return 4; // null (and what JSON turns into null or leaves out)
}
