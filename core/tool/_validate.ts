/**
 * Argument validation with a tool's zod schema.
 *
 * @module
 */
import type { z } from "zod";

/** The strict form of each schema, built once (tools are called many times). */
const _strict = new WeakMap<z.ZodTypeAny, z.ZodTypeAny>();

/** Outcome of {@link validateArgs}. */
export type Validation = { ok: true; value: unknown } | { ok: false; problems: string[] };

/**
 * Validate `args` against a zod object schema; unknown keys are refused.
 * Problems are listed by parameter name (`filepath: Required`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { validateArgs } from "./_validate.ts";
 * const v = validateArgs(z.object({ filepath: z.string() }), {});
 * assert.ok(!v.ok && v.problems[0] === "filepath: Required");
 * ```
 */
export function validateArgs(schema: z.ZodTypeAny, args: unknown): Validation {
  let strict = _strict.get(schema);
  if (!strict) {
    strict = typeof (schema as { strict?: unknown }).strict === "function"
      ? (schema as unknown as z.ZodObject<z.ZodRawShape>).strict()
      : schema;
    _strict.set(schema, strict);
  }
  const parsed = strict.safeParse(args ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: parsed.error.issues.map(_issueText) };
}

function _issueText(issue: z.ZodIssue): string {
  const where = issue.path.length ? issue.path.join(".") : "arguments";
  if (issue.code === "unrecognized_keys") {
    return `${where}: unknown parameter${issue.keys.length > 1 ? "s" : ""} ${
      issue.keys.map((k) => `"${k}"`).join(", ")
    }`;
  }
  return `${where}: ${issue.message}`;
}
