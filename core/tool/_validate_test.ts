import assert from "node:assert/strict";
import { z } from "zod";
import { validateArgs } from "./_validate.ts";

const schema = z.object({
  filepath: z.string(),
  max_lines: z.number().optional(),
  options: z.object({ depth: z.number() }).optional(),
});

Deno.test("validateArgs accepts valid arguments and returns the parsed value", () => {
  assert.deepEqual(validateArgs(schema, { filepath: "a.txt", max_lines: 3 }), {
    ok: true,
    value: { filepath: "a.txt", max_lines: 3 },
  });
});

Deno.test("validateArgs lists every problem by parameter name", () => {
  assert.deepEqual(validateArgs(schema, { max_lines: "10" }), {
    ok: false,
    problems: ["filepath: Required", "max_lines: Expected number, received string"],
  });
});

Deno.test("validateArgs names a nested parameter by its dotted path", () => {
  assert.deepEqual(validateArgs(schema, { filepath: "a", options: { depth: "deep" } }), {
    ok: false,
    problems: ["options.depth: Expected number, received string"],
  });
});

Deno.test("validateArgs refuses one unknown parameter, naming it", () => {
  assert.deepEqual(validateArgs(schema, { filepath: "a", extra: 1 }), {
    ok: false,
    problems: ['arguments: unknown parameter "extra"'],
  });
});

Deno.test("validateArgs refuses several unknown parameters in one problem", () => {
  assert.deepEqual(validateArgs(schema, { filepath: "a", x: 1, y: 2 }), {
    ok: false,
    problems: ['arguments: unknown parameters "x", "y"'],
  });
});

Deno.test("validateArgs refuses unknown parameters even for a passthrough schema", () => {
  const v = validateArgs(z.object({ a: z.string() }).passthrough(), { a: "x", b: 1 });
  assert.deepEqual(v, { ok: false, problems: ['arguments: unknown parameter "b"'] });
});

Deno.test("validateArgs treats undefined and null arguments as an empty object", () => {
  const empty = z.object({ n: z.number().default(1) });
  assert.deepEqual(validateArgs(empty, undefined), { ok: true, value: { n: 1 } });
  assert.deepEqual(validateArgs(empty, null), { ok: true, value: { n: 1 } });
});

Deno.test("validateArgs reports a top-level type error under 'arguments'", () => {
  assert.deepEqual(validateArgs(schema, "a.txt"), {
    ok: false,
    problems: ["arguments: Expected object, received string"],
  });
});

Deno.test("validateArgs applies defaults", () => {
  const s = z.object({ limit: z.number().default(100), mode: z.enum(["a", "b"]).default("a") });
  assert.deepEqual(validateArgs(s, {}), { ok: true, value: { limit: 100, mode: "a" } });
});

Deno.test("validateArgs does not change the schema it was given", () => {
  const s = z.object({ a: z.string() });
  validateArgs(s, { a: "x", b: 1 });
  assert.equal(s.safeParse({ a: "x", b: 1 }).success, true);
});
