import assert from "node:assert/strict";
import { z } from "zod";
import { PermissionDeniedError } from "./errors.ts";
import { invokeTool, testContext } from "./invoke.ts";
import { collectTools, type ToolCallContext, type ToolDefinition } from "./tool.ts";

async function _tool(
  fn: (args: never, context: ToolCallContext) => unknown,
  input: z.ZodTypeAny = z.object({}),
  name = "T",
): Promise<ToolDefinition> {
  const { tools, problems } = await collectTools({
    TOOL_CONFIG: { name, description: "test tool", input_schema: input, function: fn },
  });
  assert.deepEqual(problems, []);
  return tools[0];
}

const _readInput = z.object({
  filepath: z.string().describe("File to read"),
  max_lines: z.number().int().optional(),
});

Deno.test("invokeTool runs the tool and normalises a string result", async () => {
  const def = await _tool(() => "done");
  assert.deepEqual(await invokeTool(def, {}, testContext()), { success: true, output: "done" });
});

Deno.test("invokeTool turns a thrown error into a failure with its message", async () => {
  const def = await _tool(() => {
    throw new Error("file is locked");
  });
  assert.deepEqual(await invokeTool(def, {}, testContext()), {
    success: false,
    error: 'Cannot run tool "T": file is locked',
  });
});

Deno.test("invokeTool turns a thrown non-Error value into a failure", async () => {
  const def = await _tool(() => {
    throw "plain string";
  });
  assert.deepEqual(await invokeTool(def, {}, testContext()), {
    success: false,
    error: 'Cannot run tool "T": plain string',
  });
});

Deno.test("invokeTool turns a rejected promise into a failure with its message", async () => {
  const def = await _tool(() => Promise.reject(new TypeError("bad state")));
  assert.deepEqual(await invokeTool(def, {}, testContext()), {
    success: false,
    error: 'Cannot run tool "T": bad state',
  });
});

Deno.test("invokeTool prefixes a NotCapable error with 'permission denied: '", async () => {
  const def = await _tool(() => {
    throw new Deno.errors.NotCapable('Requires read access to "/etc/passwd"');
  });
  assert.deepEqual(await invokeTool(def, {}, testContext()), {
    success: false,
    error: 'Cannot run tool "T": permission denied: Requires read access to "/etc/passwd"',
  });
});

Deno.test("invokeTool prefixes a PermissionDeniedError with 'permission denied: '", async () => {
  const def = await _tool(() => Promise.reject(new PermissionDeniedError("outside the roots")));
  assert.deepEqual(await invokeTool(def, {}, testContext()), {
    success: false,
    error: 'Cannot run tool "T": permission denied: outside the roots',
  });
});

Deno.test("invokeTool lists every bad argument by parameter name in one error and does not run the tool", async () => {
  let runs = 0;
  const def = await _tool(() => {
    runs++;
    return "ran";
  }, z.object({ filepath: z.string(), max_lines: z.number() }));
  const res = await invokeTool(def, { max_lines: "10" }, testContext());
  assert.equal(runs, 0);
  assert.deepEqual(res, {
    success: false,
    error: 'Cannot run tool "T": invalid arguments: filepath: Required; ' +
      "max_lines: Expected number, received string",
    problems: ["filepath: Required", "max_lines: Expected number, received string"],
  });
});

Deno.test("invokeTool refuses an unknown extra parameter, naming it, and does not run the tool", async () => {
  let runs = 0;
  const def = await _tool(() => {
    runs++;
    return "ran";
  }, _readInput);
  const res = await invokeTool(def, { filepath: "a.txt", maxlines: 3 }, testContext());
  assert.equal(runs, 0);
  assert.equal(res.success, false);
  assert.equal(
    res.error,
    'Cannot run tool "T": invalid arguments: arguments: unknown parameter "maxlines"',
  );
});

Deno.test("invokeTool refuses unknown parameters even when the schema passes them through", async () => {
  let runs = 0;
  const def = await _tool(() => {
    runs++;
    return "ran";
  }, z.object({ a: z.string() }).passthrough());
  const res = await invokeTool(def, { a: "x", b: 1, c: 2 }, testContext());
  assert.equal(runs, 0);
  assert.ok(res.error?.includes('unknown parameters "b", "c"'), res.error);
});

Deno.test("invokeTool refuses arguments that are not an object, without running the tool", async () => {
  let runs = 0;
  const def = await _tool(() => {
    runs++;
    return "ran";
  });
  for (const args of ["a.txt", 42, [1, 2], null, true]) {
    assert.deepEqual(await invokeTool(def, args, testContext()), {
      success: false,
      error: 'Cannot run tool "T": arguments must be a JSON object',
    }, JSON.stringify(args));
  }
  assert.equal(runs, 0);
});

Deno.test("invokeTool treats missing (undefined) arguments as an empty object", async () => {
  const def = await _tool((args: Record<string, unknown>) => ({ got: args }));
  assert.deepEqual(await invokeTool(def, undefined, testContext()), { got: {}, success: true });
});

Deno.test("invokeTool applies schema defaults before running the tool", async () => {
  let seen: unknown;
  const def = await _tool(
    (args: unknown) => {
      seen = args;
      return { ok: true };
    },
    z.object({
      path: z.string(),
      limit: z.number().default(100),
      mode: z.enum(["fast", "slow"]).default("fast"),
    }),
  );
  const res = await invokeTool(def, { path: "a" }, testContext());
  assert.equal(res.success, true);
  assert.deepEqual(seen, { path: "a", limit: 100, mode: "fast" });
});

Deno.test("invokeTool passes the context to the tool", async () => {
  const def = await _tool((_args: never, ctx: { workspace: string }) => ctx.workspace);
  const res = await invokeTool(def, {}, testContext({ workspace: "/the/ws" }));
  assert.deepEqual(res, { success: true, output: "/the/ws" });
});

Deno.test("invokeTool turns a non-JSON result into a failure naming the tool", async () => {
  const def = await _tool(() => ({ n: 1n }), z.object({}), "Counter");
  assert.deepEqual(await invokeTool(def, {}, testContext()), {
    success: false,
    error: 'Cannot run tool "Counter": its result is not JSON: result.n is a BigInt',
  });
});

Deno.test("testContext collects reports and grants the workspace for read and write", () => {
  const ctx = testContext({ workspace: "/ws" });
  ctx.report("start", "hello");
  assert.deepEqual(ctx.reports, [{ kind: "start", message: "hello" }]);
  assert.deepEqual(ctx.grant, { read: ["/ws"], write: ["/ws"], run: [], net: [] });
  assert.equal(ctx.signal.aborted, false);
});
