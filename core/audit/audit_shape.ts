/**
 * The shape of a call's arguments, for audit lines that must not hold
 * their values (the policy's `audit_args`, default `shape`): types, keys
 * and lengths, never a string's, number's or boolean's value.
 *
 * @module
 */

/** Limits of {@link argShape}: past them a part is cut and the shape says so. */
const _MAX_DEPTH = 8;
const _MAX_KEYS = 64;
const _MAX_ITEMS = 8;
const _MAX_NODES = 512;

/**
 * The shape of `value`: `"string(12)"`, `"number"`, `"boolean"`, `"null"`,
 * `{ type: "array", length, items }` (the first items' shapes) or an object
 * of its keys' shapes. `truncated` is true when a part was cut (deep,
 * many keys or items).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { argShape } from "./audit_shape.ts";
 * const s = argShape({ path: "secret.txt", n: 3, tags: ["a", "bb"] });
 * assert.deepEqual(s.shape, {
 *   path: "string(10)",
 *   n: "number",
 *   tags: { type: "array", length: 2, items: ["string(1)", "string(2)"] },
 * });
 * assert.ok(!JSON.stringify(s).includes("secret"));
 * ```
 */
export function argShape(value: unknown): { shape: unknown; truncated: boolean } {
  const state = { nodes: 0, truncated: false };
  return { shape: _shape(value, 0, state, new Set()), truncated: state.truncated };
}

function _shape(
  v: unknown,
  depth: number,
  state: { nodes: number; truncated: boolean },
  seen: Set<object>,
): unknown {
  state.nodes++;
  if (v === null) return "null";
  if (typeof v === "string") return `string(${v.length})`;
  if (typeof v !== "object") return typeof v;
  if (seen.has(v)) return "cycle";
  if (depth >= _MAX_DEPTH || state.nodes > _MAX_NODES) {
    state.truncated = true;
    return Array.isArray(v) ? `array(${v.length})` : "object";
  }
  seen.add(v);
  try {
    if (Array.isArray(v)) {
      if (v.length > _MAX_ITEMS) state.truncated = true;
      const items = v.slice(0, _MAX_ITEMS).map((x) => _shape(x, depth + 1, state, seen));
      return { type: "array", length: v.length, items };
    }
    const keys = Object.keys(v);
    if (keys.length > _MAX_KEYS) state.truncated = true;
    const out: Record<string, unknown> = {};
    // Own properties only, whatever their names (a key "__proto__" stays a key).
    for (const k of keys.slice(0, _MAX_KEYS)) {
      Object.defineProperty(out, k.slice(0, 128), {
        value: _shape((v as Record<string, unknown>)[k], depth + 1, state, seen),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    if (keys.length > _MAX_KEYS) out["…"] = `${keys.length - _MAX_KEYS} more keys`;
    return out;
  } finally {
    seen.delete(v);
  }
}
