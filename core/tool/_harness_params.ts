/**
 * The command-line parameters of a tool, derived from its zod schema (no
 * hand-written parsing): each top-level key is `--key value` (`--key-name`
 * also works for `key_name`), booleans are `--flag` / `--no-flag`, numbers
 * are parsed, arrays repeat the flag (or take one JSON array), objects take
 * JSON, and the first string parameter (a required one first) may be given
 * positionally.
 *
 * @module
 */
import type { ToolDefinition } from "./tool.ts";

/** Flags of the harness itself; a parameter with one of these names has no flag. */
export const RESERVED_FLAGS: ReadonlySet<string> = new Set(["json", "help"]);

class _UsageError extends Error {}

/** One command-line parameter derived from a top-level schema key. */
export interface HarnessParam {
  key: string;
  kind: "string" | "number" | "boolean" | "array" | "json";
  /** For arrays: the kind of the items. */
  item?: "string" | "number" | "json";
  required: boolean;
  description?: string;
  defaultValue?: unknown;
  choices?: string[];
}

/**
 * The command-line parameters of a tool, from its zod schema.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { collectTools } from "./tool.ts";
 * import { describeParams } from "./_harness_params.ts";
 * const { tools: [t] } = await collectTools({ TOOL_CONFIG: { name: "T", description: "T",
 *   input_schema: z.object({ n: z.number().default(1).describe("How many") }), function: () => "" } });
 * assert.ok(describeParams(t)[0].kind === "number");
 * ```
 */
export function describeParams(def: ToolDefinition): HarnessParam[] {
  const shape = _shape(def.input);
  return Object.entries(shape).map(([key, field]) => {
    const info = _unwrap(field);
    const param: HarnessParam = {
      key,
      kind: "json",
      required: !_accepts(field, undefined),
      description: _description(field),
      defaultValue: info.defaultValue,
    };
    switch (info.type) {
      case "ZodString":
        param.kind = "string";
        break;
      case "ZodNumber":
      case "ZodBigInt":
        param.kind = "number";
        break;
      case "ZodBoolean":
        param.kind = "boolean";
        break;
      case "ZodEnum":
        param.kind = "string";
        param.choices = (info.schema._def.values as unknown[]).map(String);
        break;
      case "ZodNativeEnum":
        param.kind = "string";
        break;
      case "ZodLiteral":
        param.kind = typeof info.schema._def.value === "number" ? "number" : "string";
        break;
      case "ZodArray": {
        param.kind = "array";
        const item = _unwrap(info.schema._def.type).type;
        param.item = item === "ZodNumber" ? "number" : item === "ZodString" ? "string" : "json";
        break;
      }
    }
    return param;
  });
}

// deno-lint-ignore no-explicit-any
type _AnyZod = { _def: any; description?: string; safeParse(v: unknown): { success: boolean } };

function _shape(schema: unknown): Record<string, _AnyZod> {
  const s = schema as { shape?: unknown; _def?: { shape?: unknown } };
  const shape = typeof s._def?.shape === "function" ? s._def.shape() : s.shape;
  return (shape ?? {}) as Record<string, _AnyZod>;
}

function _unwrap(field: _AnyZod): { type: string; schema: _AnyZod; defaultValue?: unknown } {
  let cur = field;
  let defaultValue: unknown = undefined;
  for (let i = 0; i < 20; i++) {
    const def = cur._def ?? {};
    switch (def.typeName) {
      case "ZodDefault":
        if (defaultValue === undefined) defaultValue = def.defaultValue();
        cur = def.innerType;
        continue;
      case "ZodOptional":
      case "ZodNullable":
      case "ZodReadonly":
      case "ZodCatch":
        cur = def.innerType;
        continue;
      case "ZodEffects":
        cur = def.schema;
        continue;
      case "ZodBranded":
        cur = def.type;
        continue;
      case "ZodPipeline":
        cur = def.in;
        continue;
    }
    break;
  }
  return { type: String(cur._def?.typeName), schema: cur, defaultValue };
}

function _description(field: _AnyZod): string | undefined {
  let cur: _AnyZod | undefined = field;
  for (let i = 0; i < 20 && cur; i++) {
    if (cur.description) return cur.description;
    cur = cur._def?.innerType ?? cur._def?.schema;
  }
  return undefined;
}

function _accepts(field: _AnyZod, value: unknown): boolean {
  try {
    return field.safeParse(value).success;
  } catch {
    return false;
  }
}

function _kebab(key: string): string {
  return key.replaceAll("_", "-");
}

/**
 * Parse a tool's command line: `--json`, `--help` and the parameters'
 * values, converted to their kinds. Bad usage throws an `Error` whose
 * message says what is wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseHarnessArgs } from "./_harness_params.ts";
 * const params = [{ key: "max_lines", kind: "number" as const, required: false }];
 * assert.deepEqual(await parseHarnessArgs(params, ["--max-lines", "3", "--json"]), {
 *   json: true,
 *   help: false,
 *   values: { max_lines: 3 },
 * });
 * await assert.rejects(parseHarnessArgs(params, ["--max-lines", "x"]), /expects a number/);
 * ```
 */
export async function parseHarnessArgs(
  params: HarnessParam[],
  argv: string[],
): Promise<{ json: boolean; help: boolean; values: Record<string, unknown> }> {
  // Loaded here, not with the module: any `node:` import starts Deno's Node layer, which a
  // sandbox (this module loads with core/mod.ts in every one) never needs.
  const { parseArgs } = await import("node:util");
  type Opt = { type: "string" | "boolean"; multiple?: boolean; short?: string };
  const opts: Record<string, Opt> = {
    json: { type: "boolean", short: "j" } as Opt,
    help: { type: "boolean", short: "h" } as Opt,
  };
  const byFlag = new Map<string, HarnessParam>();
  for (const p of params) {
    if (RESERVED_FLAGS.has(p.key)) continue;
    const opt: Opt = p.kind === "boolean"
      ? { type: "boolean" }
      : p.kind === "array"
      ? { type: "string", multiple: true }
      : { type: "string" };
    for (const name of new Set([p.key, _kebab(p.key)])) {
      opts[name] = opt;
      byFlag.set(name, p);
    }
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: opts,
      strict: true,
      allowPositionals: true,
      allowNegative: true,
    });
  } catch (e) {
    throw new _UsageError(e instanceof Error ? e.message : String(e));
  }
  const raw = parsed.values as Record<string, unknown>;
  const values: Record<string, unknown> = {};
  for (const [flag, value] of Object.entries(raw)) {
    const p = byFlag.get(flag);
    if (!p) continue;
    if (p.key in values) {
      throw new _UsageError(`--${p.key} is given twice (as --${p.key} and --${_kebab(p.key)})`);
    }
    values[p.key] = _convert(p, value);
  }
  if (parsed.positionals.length > 0) {
    const first = positionalParam(params);
    if (!first) {
      throw new _UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
    }
    if (parsed.positionals.length > 1) {
      throw new _UsageError(
        `unexpected argument ${JSON.stringify(parsed.positionals[1])} (only <${first.key}> ` +
          `may be given without a flag)`,
      );
    }
    if (first.key in values) {
      throw new _UsageError(`${first.key} is given both positionally and as --${first.key}`);
    }
    values[first.key] = parsed.positionals[0];
  }
  return { json: raw.json === true, help: raw.help === true, values };
}

/**
 * The parameter a bare argument gives: the first required string parameter,
 * else the first string parameter (`find_todos.ts src` sets `path` even
 * when it has a default).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { positionalParam } from "./_harness_params.ts";
 * const path = { key: "path", kind: "string" as const, required: false, defaultValue: "." };
 * const name = { key: "name", kind: "string" as const, required: true };
 * assert.equal(positionalParam([path])?.key, "path");
 * assert.equal(positionalParam([path, name])?.key, "name");
 * ```
 */
export function positionalParam(params: HarnessParam[]): HarnessParam | undefined {
  const strings = params.filter((p) => p.kind === "string" && !RESERVED_FLAGS.has(p.key));
  return strings.find((p) => p.required) ?? strings[0];
}

function _convert(p: HarnessParam, value: unknown): unknown {
  switch (p.kind) {
    case "boolean":
    case "string":
      return value;
    case "number":
      return _number(p.key, String(value));
    case "array":
      // Repeat the flag for each item, or give the whole list as one JSON array.
      return (value as string[]).flatMap((v) => {
        const list = _jsonArray(v);
        if (list) return list;
        return [p.item === "number" ? _number(p.key, v) : p.item === "json" ? _json(p.key, v) : v];
      });
    case "json":
      return _json(p.key, String(value));
  }
}

/** `text` as a JSON array, when it is one (`[1, 2]`, `[{"sku": "a"}]`), else undefined. */
function _jsonArray(text: string): unknown[] | undefined {
  if (!text.trimStart().startsWith("[")) return undefined;
  try {
    const value = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function _number(key: string, text: string): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n)) {
    throw new _UsageError(`--${key} expects a number, got ${JSON.stringify(text)}`);
  }
  return n;
}

function _json(key: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new _UsageError(`--${key} expects JSON, got ${JSON.stringify(text)}`);
  }
}
