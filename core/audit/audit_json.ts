/**
 * The audit log's encoders: canonical JSON (the input of the arguments'
 * digest) and a bounded copy of any value that JSON can always encode.
 * Neither recurses nor throws, whatever the value: 100,000 levels, cycles,
 * bigints, functions, a 50 MB string.
 *
 * @module
 */

/**
 * JSON with object keys sorted at every level (the input of the digest).
 * Built without recursion, so any depth encodes; it never throws: a cycle
 * becomes `"[cycle]"`, a bigint its decimal string, and past 50 million
 * values the rest is `"[truncated]"`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalJson } from "./audit_json.ts";
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
 * import { boundedJson } from "./audit_json.ts";
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
