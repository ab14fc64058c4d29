/**
 * The return contract: every call yields a JSON object with a boolean
 * `success`, and an `error` string when it failed.
 *
 * @module
 */
import { contentProblems } from "./content.ts";

/** The result of every tool call. */
export interface ToolResult {
  success: boolean;
  error?: string;
  [key: string]: unknown;
}

/**
 * Why a failed call is not the tool's own failure: corral or its sandbox
 * failed (`error`: a throw, a crash, a timeout, a sandbox that would not
 * start), or something refused the call (`denied`: policy, confirmation,
 * limits, bad arguments, a permission). `reason` is a short word
 * (`threw`, `timeout`, `crashed`, `confirmation`, …) kept in the audit line.
 */
export interface CallFault {
  outcome: "error" | "denied";
  reason: string;
}

const _FAULTS = new WeakMap<object, CallFault>();

/**
 * Mark `result` with why it failed (see {@link CallFault}) and return it.
 * The mark is kept beside the object (a WeakMap), not in it: JSON, clients,
 * schemas and deep equality never see it; it stays with this object only
 * (across a process boundary it travels in the protocol message,
 * core/sandbox/protocol.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failure, faultOf, withFault } from "./result.ts";
 * const r = withFault(failure("X", "boom"), "error", "threw");
 * assert.deepEqual(faultOf(r), { outcome: "error", reason: "threw" });
 * assert.deepEqual(Reflect.ownKeys(r), ["success", "error"]);
 * ```
 */
export function withFault(
  result: ToolResult,
  outcome: CallFault["outcome"],
  reason: string,
): ToolResult {
  _FAULTS.set(result, { outcome, reason });
  return result;
}

/** The mark {@link withFault} left on `result`, if any. */
export function faultOf(result: ToolResult): CallFault | undefined {
  return _FAULTS.get(result);
}

/**
 * A fault as it arrived from a sandbox (untrusted): only the known shapes,
 * else undefined.
 */
export function parseFault(value: unknown): CallFault | undefined {
  if (!value || typeof value !== "object") return undefined;
  const { outcome, reason } = value as Record<string, unknown>;
  if ((outcome !== "error" && outcome !== "denied") || typeof reason !== "string") return undefined;
  return { outcome, reason: reason.slice(0, 40) };
}

/** Build a failure result with the standard message form. */
export function failure(tool: string, reason: string, extra?: Record<string, unknown>): ToolResult {
  return { success: false, error: `Cannot run tool "${tool}": ${reason}`, ...extra };
}

/**
 * Turn whatever a tool returned into a {@link ToolResult}.
 * A string becomes `{ success: true, output }`; an object without a boolean
 * `success` gets `success: true`; anything that is not a plain JSON object
 * (numbers, arrays, null, cycles, BigInt, functions, symbols) becomes a
 * failure naming the tool.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizeResult } from "./result.ts";
 * assert.ok(normalizeResult("Echo", "hi").output === "hi");
 * assert.ok(normalizeResult("Echo", 42).success === false);
 * ```
 */
export function normalizeResult(tool: string, value: unknown): ToolResult {
  if (typeof value === "string") return { success: true, output: value };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const what = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
    return _broken(failure(tool, `it returned ${what}, not an object or a string`));
  }
  const walk: _Walk = { seen: new Set() };
  const problem = _problem(value, walk);
  if (problem) {
    return _broken(failure(tool, `its result is not JSON: result${problem.path} ${problem.what}`));
  }
  // A copy that shares nothing with the tool's value, exactly what JSON carries.
  const out = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  if (typeof out.success !== "boolean") {
    if ("success" in out) return _broken(failure(tool, "its result has a non-boolean `success`"));
    out.success = true;
  }
  if (out.success === false && typeof out.error !== "string") {
    out.error = `Cannot run tool "${tool}": it failed without an error message`;
  }
  if ("content_blocks" in out) {
    const problems = contentProblems(out.content_blocks);
    if (problems.length) {
      return _broken(failure(tool, `invalid content blocks: ${problems.join("; ")}`));
    }
  }
  return out as ToolResult;
}

/** A result that breaks the return contract is corral's error, not the tool's answer. */
function _broken(result: ToolResult): ToolResult {
  return withFault(result, "error", "bad_result");
}

interface _Walk {
  seen: Set<object>;
}

// Paths are built only on the way out of a problem, so clean results cost
// no string work.
function _problem(v: unknown, walk: _Walk): { path: string; what: string } | undefined {
  switch (typeof v) {
    case "bigint":
      return { path: "", what: "is a BigInt" };
    case "function":
      return { path: "", what: "is a function" };
    case "symbol":
      return { path: "", what: "is a symbol" };
    case "number":
      return Number.isFinite(v) ? undefined : { path: "", what: `is ${v}` };
    case "object": {
      if (v === null) return undefined;
      if (walk.seen.has(v)) return { path: "", what: "is a circular reference" };
      if (typeof (v as { toJSON?: unknown }).toJSON === "function") return undefined;
      walk.seen.add(v);
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const found = _problem(v[i], walk);
          if (found) return { path: `[${i}]${found.path}`, what: found.what };
        }
      } else {
        for (const k in v) {
          if (!Object.hasOwn(v, k)) continue;
          const x = (v as Record<string, unknown>)[k];
          if (x === undefined) continue;
          const found = _problem(x, walk);
          if (found) return { path: `.${k}${found.path}`, what: found.what };
        }
      }
      walk.seen.delete(v);
      return undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Cut a result whose JSON exceeds `maxBytes`, keeping `success` and `error`
 * and marking it `truncated`. The cut result's JSON fits in `maxBytes`
 * (unless the limit is smaller than the bare marker): escaping is counted,
 * the error takes at most half of the room, and no character is split.
 */
export function capResult(result: ToolResult, maxBytes: number): ToolResult {
  // Plain data whose JSON surely fits is not encoded at all (a 10 KB result: ≈ 10 µs saved).
  if (jsonBytesBound(result, maxBytes) <= maxBytes) return result;
  const text = JSON.stringify(result);
  // A UTF-8 byte is at most 3 per UTF-16 unit: short texts need no counting.
  if (text.length * 3 <= maxBytes) return result;
  const size = _bytes(text);
  if (size <= maxBytes) return result;
  const marker = `…[truncated: result was ${size} bytes, limit ${maxBytes}]`;
  const capped: ToolResult = { success: result.success, truncated: true, output: marker };
  if (result.error !== undefined) {
    const error = String(result.error).slice(0, 2000);
    capped.error = _head(
      error,
      _longestFitting(error.length, maxBytes / 2, (n) => ({ ...capped, error: _head(error, n) })),
    );
  }
  const n = _longestFitting(text.length, maxBytes, (n) => ({
    ...capped,
    output: _head(text, n) + marker,
  }));
  capped.output = _head(text, n) + marker;
  return capped;
}

/**
 * An upper bound of the UTF-8 size of `JSON.stringify(value)`, found
 * without encoding it: every string unit counts 6 bytes (`\u001f` is the
 * longest escape; no character takes more), a number 24. Infinity as soon
 * as the bound passes `limit`, and for anything but plain data (JSON could
 * call a `toJSON`, throw on a bigint or a cycle): the caller then encodes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonBytesBound } from "./result.ts";
 * const value = { a: ["\u0001", 1.5, null, true], b: "é" };
 * assert.ok(jsonBytesBound(value, 1e6) >= new TextEncoder().encode(JSON.stringify(value)).length);
 * assert.ok(jsonBytesBound({ at: new Date() }, 1e6) === Infinity);
 * ```
 */
export function jsonBytesBound(value: unknown, limit: number): number {
  try {
    return _bound(value, limit, 0);
  } catch {
    return Infinity; // a getter that throws: JSON.stringify would meet it too
  }
}

const _MAX_BOUND_DEPTH = 64;

function _bound(v: unknown, limit: number, depth: number): number {
  switch (typeof v) {
    case "string":
      return v.length * 6 + 2;
    case "number":
      return 24;
    case "boolean":
    case "undefined":
    case "function":
    case "symbol":
      return 5; // `false`; the rest are `null` in an array, left out in an object
    case "object": {
      if (v === null) return 4;
      if (depth >= _MAX_BOUND_DEPTH || typeof (v as { toJSON?: unknown }).toJSON === "function") {
        return Infinity;
      }
      const proto = Object.getPrototypeOf(v);
      const array = Array.isArray(v);
      if (!array && proto !== Object.prototype && proto !== null) return Infinity;
      let total = 2;
      if (array) {
        for (let i = 0; i < v.length && total <= limit; i++) {
          total += Math.max(4, _bound(v[i], limit - total, depth + 1)) + 1;
        }
      } else {
        for (const k of Object.keys(v)) {
          total += k.length * 6 + 4 +
            _bound((v as Record<string, unknown>)[k], limit - total, depth + 1);
          if (total > limit) break;
        }
      }
      return total > limit ? Infinity : total;
    }
    default:
      return Infinity; // a bigint: JSON.stringify throws
  }
}

function _bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** The first `n` UTF-16 units of `text`, without a split surrogate pair. */
function _head(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/** The largest `n <= max` whose `build(n)` has JSON of at most `limit` bytes (0 if none). */
function _longestFitting(max: number, limit: number, build: (n: number) => unknown): number {
  // Every character costs at least one byte, so more than `limit` never fits.
  let lo = 0;
  let hi = Math.min(max, Math.max(0, Math.floor(limit)));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (_bytes(JSON.stringify(build(mid))) <= limit) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
