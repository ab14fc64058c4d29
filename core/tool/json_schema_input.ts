/**
 * A tool may give its input schema as JSON Schema (2020-12 or older)
 * instead of zod. corral keeps that schema exactly as written for
 * `tools/list` (`$schema`, `$defs`, `$ref`, `additionalProperties`, …) and
 * checks arguments against its top level: an object, the `required`
 * properties present, no other property when `additionalProperties` is
 * `false`, and the JSON type of each property that declares one.
 *
 * @module
 */
import { z } from "zod";

const _raw = new WeakMap<z.ZodTypeAny, Record<string, unknown>>();

/** Whether `value` looks like a JSON Schema object (not a zod schema). */
export function isJsonSchema(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === "object" && !(value instanceof z.ZodType) &&
    ((value as { type?: unknown }).type === "object" || "$schema" in (value as object));
}

/** The JSON Schema a zod validator was made from, if any. */
export function rawJsonSchema(schema: z.ZodTypeAny): Record<string, unknown> | undefined {
  return _raw.get(schema);
}

const _TYPES: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number",
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === "boolean",
  object: (v) => !!v && typeof v === "object" && !Array.isArray(v),
  array: (v) => Array.isArray(v),
  null: (v) => v === null,
};

/**
 * A zod validator for a JSON Schema object, remembering the schema.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonSchemaInput, rawJsonSchema } from "./json_schema_input.ts";
 * const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
 * const v = jsonSchemaInput(schema);
 * assert.ok(v.safeParse({ n: 1 }).success);
 * assert.ok(!v.safeParse({ n: "x" }).success && !v.safeParse({}).success && !v.safeParse({ n: 1, m: 2 }).success);
 * assert.equal(rawJsonSchema(v), schema);
 * ```
 */
export function jsonSchemaInput(schema: Record<string, unknown>): z.ZodTypeAny {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = Array.isArray(schema.required) ? schema.required as string[] : [];
  const closed = schema.additionalProperties === false;
  const validator = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    for (const key of required) {
      if (!(key in value)) ctx.addIssue({ code: "custom", path: [key], message: "Required" });
    }
    for (const [key, v] of Object.entries(value)) {
      const prop = props[key];
      if (!prop) {
        if (closed) ctx.addIssue({ code: "custom", path: [key], message: "unknown parameter" });
        continue;
      }
      const types = Array.isArray(prop.type) ? prop.type : prop.type ? [prop.type] : [];
      if (types.length && !types.some((t) => _TYPES[String(t)]?.(v) ?? true)) {
        ctx.addIssue({ code: "custom", path: [key], message: `Expected ${types.join(" or ")}` });
      }
    }
  });
  _raw.set(validator, schema);
  return validator;
}
