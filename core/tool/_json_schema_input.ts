/**
 * A tool may give its input schema as JSON Schema (2020-12 or older)
 * instead of zod. corral keeps that schema exactly as written for
 * `tools/list` (`$schema`, `$defs`, `$ref`, `additionalProperties`, …) and
 * checks arguments with a real JSON Schema 2020-12 validator (Ajv, the one
 * the MCP SDK uses, with its formats): nested objects, arrays, `$ref`,
 * `enum`, `oneOf`, formats. Problems are reported like zod's, by path
 * (`items.0.kind: Invalid enum value. Expected 'a' | 'b'`).
 *
 * Ajv is loaded only when a tool has such a schema
 * ({@link jsonSchemasReady}, awaited by `collectTools`).
 *
 * @module
 */
import { z } from "zod";

const _raw = new WeakMap<z.ZodTypeAny, Record<string, unknown>>();

/** One problem Ajv reports. */
interface _AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** A compiled Ajv validator. */
type _Validate = ((value: unknown) => boolean) & { errors?: _AjvError[] | null };

let _ajv: { compile(schema: object): _Validate } | undefined;
let _loading: Promise<void> | undefined;

/** Whether `value` looks like a JSON Schema object (not a zod schema). */
export function isJsonSchema(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === "object" && !(value instanceof z.ZodType) &&
    ((value as { type?: unknown }).type === "object" || "$schema" in (value as object));
}

/** The JSON Schema a zod validator was made from, if any. */
export function rawJsonSchema(schema: z.ZodTypeAny): Record<string, unknown> | undefined {
  return _raw.get(schema);
}

/** Load the JSON Schema validator (Ajv 2020-12 with formats); once per realm. */
export function loadJsonSchemaValidator(): Promise<void> {
  return _loading ??= (async () => {
    const [ajvModule, formatsModule] = await Promise.all([
      import("ajv/dist/2020.js"),
      import("ajv-formats"),
    ]);
    // CommonJS packages: the class and the plugin are the default exports.
    const Ajv2020 = _default(ajvModule) as new (o: object) => NonNullable<typeof _ajv>;
    const addFormats = _default(formatsModule) as (ajv: unknown) => void;
    const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
    addFormats(ajv);
    _ajv = ajv;
  })();
}

/** Load the validator when one of `inputs` is a JSON Schema (else nothing is loaded). */
export async function jsonSchemasReady(inputs: unknown[]): Promise<void> {
  if (inputs.some(isJsonSchema)) await loadJsonSchemaValidator();
}

/**
 * A zod validator for a JSON Schema object, remembering the schema. The
 * validator must be loaded first ({@link loadJsonSchemaValidator}); a
 * schema Ajv cannot compile throws a `TypeError` naming the problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonSchemaInput, loadJsonSchemaValidator, rawJsonSchema } from "./_json_schema_input.ts";
 * await loadJsonSchemaValidator();
 * const schema = {
 *   type: "object",
 *   properties: { items: { type: "array", items: { $ref: "#/$defs/item" } } },
 *   required: ["items"],
 *   additionalProperties: false,
 *   $defs: { item: { type: "object", properties: { kind: { enum: ["a", "b"] } }, required: ["kind"] } },
 * };
 * const v = jsonSchemaInput(schema);
 * assert.ok(v.safeParse({ items: [{ kind: "a" }] }).success);
 * const bad = v.safeParse({ items: [{ kind: "c" }, {}], extra: 1 });
 * assert.ok(!bad.success);
 * assert.deepEqual(bad.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`), [
 *   "extra: unknown parameter",
 *   "items.0.kind: Invalid enum value. Expected 'a' | 'b'",
 *   "items.1.kind: Required",
 * ]);
 * assert.equal(rawJsonSchema(v), schema);
 * ```
 */
export function jsonSchemaInput(schema: Record<string, unknown>): z.ZodTypeAny {
  if (!_ajv) {
    throw new TypeError(
      "the JSON Schema validator is not loaded (await loadJsonSchemaValidator())",
    );
  }
  let validate: _Validate;
  try {
    validate = _ajv.compile(schema);
  } catch (err) {
    throw new TypeError(`input schema is not a valid JSON Schema: ${(err as Error).message}`);
  }
  const validator = z.unknown().superRefine((value, ctx) => {
    if (validate(value)) return;
    const seen = new Set<string>();
    for (const e of validate.errors ?? []) {
      const { path, message } = _issue(e);
      const key = `${path.join("\0")}\u0001${message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      ctx.addIssue({ code: "custom", path, message });
    }
  });
  _raw.set(validator, schema);
  return validator;
}

/** An Ajv error as a zod-like issue: the path of the value, and zod's wording where it has one. */
function _issue(e: _AjvError): { path: (string | number)[]; message: string } {
  const path: (string | number)[] = e.instancePath.split("/").slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((p) => /^\d+$/.test(p) ? Number(p) : p);
  switch (e.keyword) {
    case "required":
      return { path: [...path, String(e.params.missingProperty)], message: "Required" };
    case "additionalProperties":
    case "unevaluatedProperties": {
      const extra = e.params.additionalProperty ?? e.params.unevaluatedProperty;
      return { path: [...path, String(extra)], message: "unknown parameter" };
    }
    case "type":
      return { path, message: `Expected ${String(e.params.type).replace(/,/g, " or ")}` };
    case "enum":
      return {
        path,
        message: `Invalid enum value. Expected ${
          (e.params.allowedValues as unknown[]).map((v) => `'${v}'`).join(" | ")
        }`,
      };
    default:
      return { path, message: e.message ?? e.keyword };
  }
}

function _default(mod: unknown): unknown {
  const m = mod as { default?: { default?: unknown } };
  return m.default?.default ?? m.default ?? mod;
}
