/**
 * Keeping secrets and host paths out of what corral shows: config sections
 * passed to `TOOL_SETUP` may hold tokens, and error text may name host
 * paths. {@link redact} hides values under secret-looking keys and scrubs
 * known secret values from any text; {@link hideHostPaths} shortens
 * absolute paths outside the workspace to their last name.
 *
 * @module
 */
import { basename, relative } from "node:path";
import { isInside } from "../guard/mod.ts";

/** Keys whose values are secrets. */
export const SECRET_KEY: RegExp = /token|secret|passw|key|credential|auth/i;
/** What a secret becomes. */
export const REDACTED = "[redacted]";
/** Secret values shorter than this are not scrubbed from text (too many false hits). */
const _MIN_SECRET = 4;

/**
 * The string values under secret-looking keys anywhere in `value` (a
 * config section), to scrub from text later.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretValues } from "./redact.ts";
 * assert.ok(secretValues({ api: { token: "abc123" }, name: "x" })[0] === "abc123");
 * ```
 */
export function secretValues(value: unknown): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, secret: boolean, depth: number) => {
    if (depth > 32) return;
    if (typeof v === "string" || typeof v === "number") {
      const s = String(v);
      if (secret && s.length >= _MIN_SECRET) out.add(s);
    } else if (Array.isArray(v)) {
      for (const x of v) walk(x, secret, depth + 1);
    } else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) walk(x, secret || SECRET_KEY.test(k), depth + 1);
    }
  };
  walk(value, false, 0);
  return [...out];
}

/**
 * Replace every occurrence of each secret in `text` with `[redacted]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scrubText } from "./redact.ts";
 * assert.ok(scrubText("bad token abc123", ["abc123"]) === "bad token [redacted]");
 * ```
 */
export function scrubText(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const s of secrets) {
    if (s.length >= _MIN_SECRET && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  return out;
}

/**
 * A copy of `value` where the values of keys matching {@link SECRET_KEY}
 * (token, secret, password, key, credential, auth), whole objects too, are
 * `"[redacted]"`, and every string has the known `secrets` scrubbed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redact } from "./redact.ts";
 * const r = redact({ api_key: "k-123", note: "uses k-123", n: 1 }, ["k-123"]);
 * assert.ok(r.api_key === "[redacted]" && r.note === "uses [redacted]" && r.n === 1);
 * ```
 */
export function redact<T>(value: T, secrets: Iterable<string> = []): T {
  const list = [...secrets];
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return scrubText(v, list);
    if (depth > 64 || v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      out[k] = SECRET_KEY.test(k) && x !== null && x !== undefined ? REDACTED : walk(x, depth + 1);
    }
    return out;
  };
  return walk(value, 0) as T;
}

/**
 * A copy of `value` with the known `secrets` scrubbed from every string
 * (keys are kept: for results, where a field named `keys` is not a secret).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scrubDeep } from "./redact.ts";
 * assert.ok(scrubDeep({ out: ["x s3cr3t"] }, ["s3cr3t"]).out[0] === "x [redacted]");
 * ```
 */
export function scrubDeep<T>(value: T, secrets: Iterable<string>): T {
  const list = [...secrets];
  if (list.length === 0) return value;
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return scrubText(v, list);
    if (depth > 64 || v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, depth + 1)]));
  };
  return walk(value, 0) as T;
}

// An absolute path (or file:// URL) not glued to a word, URL or other path.
const _PATH = /file:\/\/(\/[^\s'"`()<>,;\]\[{}]*)|(?<![\w/:.~-])(\/[^\s'"`()<>,;\]\[{}]*)/g;

/**
 * Rewrite absolute host paths in `text`: inside the workspace they become
 * relative (`./a.txt` → `a.txt`), outside it only their last name is kept
 * (`/home/me/.ssh/id_rsa` → `…/id_rsa`). URLs such as `https://host/path`
 * are left alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hideHostPaths } from "./redact.ts";
 * const t = hideHostPaths('Requires read access to "/etc/shadow" from /ws/a.txt', "/ws");
 * assert.ok(t === 'Requires read access to "…/shadow" from a.txt');
 * ```
 */
export function hideHostPaths(text: string, workspace: string): string {
  return text.replace(_PATH, (whole, fileUrl?: string, bare?: string) => {
    const path = fileUrl ?? bare ?? "";
    const clean = path.replace(/[.:]+$/, "");
    const rest = path.slice(clean.length);
    if (clean === "" || clean === "/") return whole;
    if (isInside(clean, workspace)) return (relative(workspace, clean) || ".") + rest;
    const name = basename(clean.replace(/(:\d+)+$/, ""));
    return name ? `…/${name}${clean.match(/(:\d+)+$/)?.[0] ?? ""}${rest}` : whole;
  });
}
