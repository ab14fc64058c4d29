/**
 * One audit line, bounded whatever a caller sends: no caller can make
 * corral write a huge line (a 500 KB tool name, a 30 KB header) or bury the
 * log, and no value makes an encoder recurse or throw (100,000 levels,
 * cycles, bigints, functions, a 50 MB string). Every string field is cut to
 * a length, the error text to a longer one ({@link capFields}); the
 * arguments are digested from canonical JSON ({@link digestArgs}) and kept
 * as their shape ({@link argShape}) or a bounded copy ({@link boundedJson});
 * a line that is still too large is written as a bounded copy
 * ({@link encodeLine}).
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
 * import { capText } from "./audit_line.ts";
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
 * where they are made ({@link boundedJson}, {@link argShape}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capFields } from "./audit_line.ts";
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

/**
 * SHA-256 (hex) of {@link canonicalJson} of `value`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { digestArgs } from "./audit_line.ts";
 * assert.ok(await digestArgs({ a: 1, b: 2 }) === await digestArgs({ b: 2, a: 1 }));
 * ```
 */
export async function digestArgs(value: unknown): Promise<string> {
  // WebCrypto here, ../base/sha256_hex.ts elsewhere: the tests compare the two.
  const bytes = new TextEncoder().encode(canonicalJson(value));
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * JSON with object keys sorted at every level (the input of the digest).
 * Built without recursion, so any depth encodes; it never throws: a cycle
 * becomes `"[cycle]"`, a bigint its decimal string, and past 50 million
 * values the rest is `"[truncated]"`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalJson } from "./audit_line.ts";
 * assert.ok(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }) === '{"a":[{"c":3,"d":2}],"b":1}');
 * let deep: unknown = 0;
 * for (let i = 0; i < 10_000; i++) deep = [deep];
 * assert.ok(canonicalJson(deep).length === 20_001);
 * ```
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const open = new Set<object>();
  // Entries: text to emit, a value to encode (in an array: holes are null), or a container to close.
  type Entry = { text: string } | { v: unknown; inArray: boolean } | { close: string; of: object };
  const stack: Entry[] = [{ v: value, inArray: true }];
  let budget = _MAX_VALUES;
  while (stack.length > 0) {
    const e = stack.pop()!;
    if ("text" in e) {
      out.push(e.text);
      continue;
    }
    if ("close" in e) {
      out.push(e.close);
      open.delete(e.of);
      continue;
    }
    const v = _toJson(e.v);
    if (--budget < 0) out.push('"[truncated]"');
    else if (v === null || typeof v !== "object") out.push(_plainJson(v, e.inArray) ?? "null");
    else if (open.has(v)) out.push('"[cycle]"');
    else {
      open.add(v);
      if (Array.isArray(v)) {
        out.push("[");
        stack.push({ close: "]", of: v });
        for (let i = v.length - 1; i >= 0; i--) {
          stack.push({ v: v[i], inArray: true });
          if (i > 0) stack.push({ text: "," });
        }
      } else {
        const o = v as Record<string, unknown>;
        const keys = Object.keys(o).filter((k) => _plainJson(_toJson(o[k]), false) !== undefined)
          .sort();
        out.push("{");
        stack.push({ close: "}", of: v });
        for (let i = keys.length - 1; i >= 0; i--) {
          stack.push({ v: o[keys[i]], inArray: false });
          stack.push({ text: `${JSON.stringify(keys[i])}:` });
          if (i > 0) stack.push({ text: "," });
        }
      }
    }
  }
  return out.join("");
}

const _MAX_VALUES = 50_000_000;

/** What `JSON.stringify` would encode instead of `v` (its `toJSON`), never throwing. */
function _toJson(v: unknown): unknown {
  if (
    v === null || typeof v !== "object" || typeof (v as { toJSON?: unknown }).toJSON !== "function"
  ) {
    return v;
  }
  try {
    return (v as { toJSON(): unknown }).toJSON();
  } catch {
    return "[unencodable]";
  }
}

/**
 * JSON of a value that is not an object: `undefined` where JSON leaves it
 * out (in an object), `"null"` where it becomes null; `""` for objects
 * (encoded by the caller).
 */
function _plainJson(v: unknown, inArray: boolean): string | undefined {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      return Number.isFinite(v) ? String(v) : "null";
    case "boolean":
      return String(v);
    case "bigint":
      return JSON.stringify(String(v));
    case "object":
      return v === null ? "null" : "";
    default: // undefined, function, symbol
      return inArray ? "null" : undefined;
  }
}

/** Limits of {@link boundedJson}. */
export interface BoundedJsonLimits {
  /** Containers deeper than this become `"[too deep]"` (default 32). */
  maxDepth?: number;
  /** About this many bytes of JSON in all; the rest is cut with a marker (default 256 KiB). */
  maxBytes?: number;
}

/**
 * A copy of `value` that JSON can always encode, within `limits`: built
 * without recursion; containers past `maxDepth` become `"[too deep]"`,
 * strings and lists past the byte budget are cut with a marker, cycles and
 * values JSON cannot hold become `"[unencodable …]"`. `cut` says whether
 * anything was left out (the digest of the whole stays in the audit line).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boundedJson } from "./audit_line.ts";
 * let deep: unknown = 1;
 * for (let i = 0; i < 10_000; i++) deep = { a: deep };
 * const b = boundedJson(deep, { maxDepth: 3 });
 * assert.ok(b.cut && JSON.stringify(b.value) === '{"a":{"a":{"a":"[too deep]"}}}');
 * ```
 */
export function boundedJson(
  value: unknown,
  limits: BoundedJsonLimits = {},
): { value: unknown; cut: boolean } {
  const maxDepth = limits.maxDepth ?? 32;
  let budget = limits.maxBytes ?? 256 * 1024;
  let cut = false;
  const root: Record<string, unknown> = {};
  const open = new Set<object>();
  const stack: _Task[] = [{ raw: value, parent: root, key: "v", depth: 1 }];
  while (stack.length > 0) {
    const t = stack.pop()!;
    if ("done" in t) {
      open.delete(t.done); // a container is complete
      continue;
    }
    const { raw, parent, key, depth } = t;
    const v = _toJson(raw);
    if (budget <= 0) {
      parent[key] = "[truncated]";
      cut = true;
    } else if (typeof v === "string") {
      parent[key] = v.length <= budget ? v : `${v.slice(0, budget)}…[${v.length - budget} more]`;
      if (v.length > budget) cut = true;
      budget -= Math.min(v.length, budget) + 2;
    } else if (v === null || typeof v !== "object") {
      const text = _plainJson(v, true) ?? "null";
      parent[key] = typeof v === "bigint"
        ? String(v)
        : typeof v === "function" || typeof v === "symbol"
        ? `[unencodable ${typeof v}]`
        : text === "null"
        ? null
        : v;
      budget -= text.length;
    } else if (open.has(v)) {
      parent[key] = "[unencodable cycle]";
      cut = true;
    } else if (depth > maxDepth) {
      parent[key] = "[too deep]";
      cut = true;
    } else {
      open.add(v);
      stack.push({ done: v });
      budget -= 2;
      cut = _copyChildren(v, parent, key, depth, stack, () => budget, (n) => (budget -= n)) || cut;
    }
  }
  return { value: root.v, cut };
}

type _Task =
  | { raw: unknown; parent: Record<string | number, unknown>; key: string | number; depth: number }
  | { done: object };

/** Make the container for `v` in `parent[key]` and queue its children, in order, within budget. */
function _copyChildren(
  v: object,
  parent: Record<string | number, unknown>,
  key: string | number,
  depth: number,
  stack: _Task[],
  left: () => number,
  spend: (n: number) => void,
): boolean {
  const tasks: _Task[] = [];
  let cut = false;
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    parent[key] = out;
    for (let i = 0; i < v.length; i++) {
      if (left() <= 0) {
        out.push(`[${v.length - i} more items]`);
        cut = true;
        break;
      }
      out.push(null);
      spend(1);
      tasks.push({ raw: v[i], parent: out as never, key: i, depth: depth + 1 });
    }
  } else {
    const out: Record<string, unknown> = {};
    parent[key] = out;
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      if (left() <= 0) {
        out["…"] = "[more keys]";
        cut = true;
        break;
      }
      out[k] = null;
      spend(k.length + 4);
      tasks.push({ raw: (v as Record<string, unknown>)[k], parent: out, key: k, depth: depth + 1 });
    }
  }
  for (let i = tasks.length - 1; i >= 0; i--) stack.push(tasks[i]);
  return cut;
}

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
 * import { argShape } from "./audit_line.ts";
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

/**
 * One line of the log (ending in a line feed), whatever the record holds:
 * its strings capped, its size bounded; a record JSON cannot hold is
 * written with its `args` replaced by a marker or, failing that, as a
 * bounded copy. It never throws.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encodeLine } from "./audit_line.ts";
 * const line = encodeLine({ tool: "x".repeat(500_000), args: { n: 10n } });
 * const back = JSON.parse(line);
 * assert.ok(line.endsWith("\n") && back.tool.length < 300 && back.args === "[unencodable]");
 * ```
 */
export function encodeLine(record: object): string {
  const capped = capFields(record as Record<string, unknown>);
  const attempts = [
    () => JSON.stringify(capped),
    () => JSON.stringify({ ...capped, args: "[unencodable]" }),
    () => JSON.stringify(boundedJson(capped, { maxDepth: 8, maxBytes: 16 * 1024 }).value),
  ];
  for (const attempt of attempts) {
    try {
      const text = attempt();
      if (typeof text === "string" && text.length <= AUDIT_LINE_CAP) {
        return text.replace(/\n/g, "\\n") + "\n";
      }
    } catch { /* the next, plainer form */ }
  }
  return `{"time":${
    JSON.stringify(new Date().toISOString())
  },"error":"unencodable audit record"}\n`;
}
