/**
 * JSON Schema from a tool's zod schema. Used inside sandboxes when tools
 * are described (discovery); the host only handles the JSON.
 *
 * @module
 */
import type { z } from "zod";
import { zodToJsonSchema } from "zod-to-json-schema";
import { rawJsonSchema } from "./_json_schema_input.ts";
import type { JsonSchema } from "./schema.ts";

/**
 * Convert a zod object schema into a self-contained JSON Schema object:
 * types, `required`, enums, defaults and every `.describe()` text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { inputJsonSchema } from "./input_schema.ts";
 * const s = inputJsonSchema(z.object({ path: z.string().describe("Where") }));
 * assert.ok((s.properties as any).path.description === "Where");
 * ```
 */
export function inputJsonSchema(schema: z.ZodTypeAny): JsonSchema {
  const raw = rawJsonSchema(schema);
  if (raw) return structuredClone(raw) as JsonSchema; // as written: $schema, $defs, …
  // Called through a plain signature: the generic one can hit TS2589 ("type
  // instantiation is excessively deep") depending on what else is checked.
  const toJson = zodToJsonSchema as (s: unknown, o: Record<string, unknown>) => unknown;
  const out = toJson(schema, {
    $refStrategy: "none",
    target: "jsonSchema7",
  }) as JsonSchema;
  delete out.$schema;
  if (out.type !== "object") {
    throw new TypeError(`input schema must describe an object, got ${JSON.stringify(out.type)}`);
  }
  out.properties ??= {};
  return out;
}
