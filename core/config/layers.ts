/**
 * Layered settings, as git and mise do it: the same file kind read from
 * several places (corral's shipped defaults, the user's config directory, a
 * trusted project, the command line), merged key by key, lowest first.
 *
 * The rules (docs/configuration.md, "The policy and the config"):
 * - objects merge key by key, at every depth: a higher layer changes the keys
 *   it names and keeps the others;
 * - a value (a string, number or boolean) is replaced by a higher layer's;
 * - a list is replaced whole, except the lists named in `addUp` (top-level
 *   keys such as `tool_dirs`), which a higher layer adds to (each item once).
 *
 * Every setting keeps the file (or files, for a list that adds up) it came
 * from, so that `corral config` can say where each value is set.
 *
 * @module
 */

/** Where a layer sits, lowest first. */
export type LayerRole = "shipped" | "user" | "project" | "flag";

/** One file's validated content, and where it sits. */
export interface SettingsLayer {
  /** The file it was read from (or a label such as `--audit`). */
  file: string;
  role: LayerRole;
  data: Record<string, unknown>;
}

/** The merged value and, per key path, the files it came from. */
export interface MergedLayers {
  value: Record<string, unknown>;
  /** `toolsets.files.read` → the files that set it (several for a list that adds up). */
  origins: Map<string, string[]>;
}

/**
 * Merge `layers` (lowest first) by the rules above.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mergeLayers } from "./layers.ts";
 * const m = mergeLayers([
 *   { file: "shipped.json", role: "shipped", data: { toolsets: { files: { read: ["."], write: ["."] } } } },
 *   { file: "user.json", role: "user", data: { toolsets: { net: { net: ["example.com"] } }, protect: ["a"] } },
 *   { file: "cli.json", role: "flag", data: { toolsets: { files: { write: [] } }, protect: ["b"] } },
 * ], ["protect"]);
 * assert.deepEqual(m.value.toolsets, { files: { read: ["."], write: [] }, net: { net: ["example.com"] } });
 * assert.deepEqual(m.value.protect, ["a", "b"]);
 * assert.deepEqual(m.origins.get("toolsets.files.read"), ["shipped.json"]);
 * assert.deepEqual(m.origins.get("toolsets.files.write"), ["cli.json"]);
 * assert.deepEqual(m.origins.get("protect"), ["user.json", "cli.json"]);
 * ```
 */
export function mergeLayers(layers: SettingsLayer[], addUp: readonly string[] = []): MergedLayers {
  const value: Record<string, unknown> = {};
  const origins = new Map<string, string[]>();
  for (const layer of layers) _merge(value, layer.data, [], layer.file, origins, addUp);
  return { value, origins };
}

function _merge(
  into: Record<string, unknown>,
  from: Record<string, unknown>,
  path: string[],
  file: string,
  origins: Map<string, string[]>,
  addUp: readonly string[],
): void {
  for (const [key, v] of Object.entries(from)) {
    if (v === undefined || key === "$schema" || key === "$comment") continue;
    const at = [...path, key];
    const name = settingKey(at);
    const old = into[key];
    if (_isObject(v) && _isObject(old)) {
      _merge(old, v, at, file, origins, addUp);
      continue;
    }
    if (Array.isArray(v) && Array.isArray(old) && path.length === 0 && addUp.includes(key)) {
      into[key] = [...old, ...v.filter((x) => !old.some((o) => _same(o, x)))];
      if (v.length) origins.set(name, [...new Set([...(origins.get(name) ?? []), file])]);
      continue;
    }
    // Replaced: what was set below this key no longer counts.
    for (const k of [...origins.keys()]) {
      if (k.startsWith(`${name}.`) || k.startsWith(`${name}[`)) origins.delete(k);
    }
    into[key] = _copy(v);
    _record(into[key], at, file, origins);
  }
}

/** Note `file` as the origin of `value` and every key below it. */
function _record(value: unknown, at: string[], file: string, origins: Map<string, string[]>) {
  if (_isObject(value) && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) _record(v, [...at, k], file, origins);
  } else {
    origins.set(settingKey(at), [file]);
  }
}

/**
 * A key path as `corral config` prints it: `toolsets.files.read`, with a
 * key that is not a plain name in brackets (`plugins["npm:@a/b@1"].net`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { settingKey } from "./layers.ts";
 * assert.equal(settingKey(["plugins", "npm:@a/b@1", "net"]), 'plugins["npm:@a/b@1"].net');
 * ```
 */
export function settingKey(path: string[]): string {
  return path.map((k, i) =>
    /^[A-Za-z_$][\w$-]*$/.test(k) ? (i === 0 ? k : `.${k}`) : `[${JSON.stringify(k)}]`
  ).join("");
}

/** One setting in effect: its key path, its value and where it came from. */
export interface SettingEntry {
  key: string;
  value: unknown;
  from: string[];
}

/**
 * Every leaf setting of a merged value (a list counts as one setting), in
 * key order, with its origin; keys without one get `fallback`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mergeLayers, settingEntries } from "./layers.ts";
 * const m = mergeLayers([{ file: "a.json", role: "user", data: { x: { y: 1 }, z: [1] } }]);
 * assert.deepEqual(settingEntries(m), [
 *   { key: "x.y", value: 1, from: ["a.json"] },
 *   { key: "z", value: [1], from: ["a.json"] },
 * ]);
 * ```
 */
export function settingEntries(
  merged: MergedLayers,
  fallback = "corral's default",
): SettingEntry[] {
  const out: SettingEntry[] = [];
  const walk = (v: unknown, at: string[]) => {
    if (_isObject(v) && Object.keys(v).length) {
      for (const [k, x] of Object.entries(v)) walk(x, [...at, k]);
      return;
    }
    const key = settingKey(at);
    out.push({ key, value: v, from: merged.origins.get(key) ?? [fallback] });
  };
  walk(merged.value, []);
  return out;
}

function _isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function _copy<T>(v: T): T {
  return v === undefined ? v : structuredClone(v);
}

function _same(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}
