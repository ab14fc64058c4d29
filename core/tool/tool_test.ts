import assert from "node:assert/strict";
import { z } from "zod";
import { BaseTool, collectTools, tool, type ToolConfig, type ToolDefinition } from "./tool.ts";
import { testContext } from "./invoke.ts";

const _input = z.object({ text: z.string().describe("Text to echo") });

/** The comparable facts of a definition (everything but style and functions). */
async function _facts(def: ToolDefinition, args: unknown = { text: "hi" }) {
  return {
    name: def.name,
    description: def.description,
    permissions: def.permissions,
    confirm: def.confirm,
    input: def.input,
    load: await def.shouldLoad(),
    result: await def.invoke(args, testContext()),
  };
}

function _echoConfig(overrides: Partial<ToolConfig> = {}): ToolConfig {
  return {
    name: "Echo",
    description: "Echo text",
    permissions: "wr",
    input_schema: _input,
    requires_confirmation: true,
    function: (args: { text: string }) => ({ success: true, echoed: args.text }),
    ...overrides,
  };
}

@tool({ permissions: "wr", description: "Echo text", input: _input, confirm: true })
class Echo extends BaseTool {
  run(args: { text: string }) {
    return { success: true, echoed: args.text };
  }
}

Deno.test("a @tool class takes its name from the class and its facts from the decorator", async () => {
  const { tools, problems } = await collectTools({ Echo });
  assert.deepEqual(problems, []);
  assert.equal(tools.length, 1);
  assert.equal(tools[0].style, "class");
  assert.deepEqual(await _facts(tools[0]), {
    name: "Echo",
    description: "Echo text",
    permissions: "rw",
    confirm: true,
    input: _input,
    load: { load: true },
    result: { success: true, echoed: "hi" },
  });
});

Deno.test("a @tool class, TOOL_CONFIGS, TOOL_CONFIG (object and array) and default.tools() give equal definitions", async () => {
  const fromClass = (await collectTools({ Echo })).tools;
  const fromConfigs = (await collectTools({ TOOL_CONFIGS: [_echoConfig()] })).tools;
  const fromConfig = (await collectTools({ TOOL_CONFIG: _echoConfig() })).tools;
  const fromConfigArray = (await collectTools({ TOOL_CONFIG: [_echoConfig()] })).tools;
  const fromPlugin = (await collectTools({ default: { tools: () => [_echoConfig()] } })).tools;
  const expected = await _facts(fromClass[0]);
  for (const list of [fromConfigs, fromConfig, fromConfigArray, fromPlugin]) {
    assert.equal(list.length, 1);
    assert.equal(list[0].style, "module");
    assert.deepEqual(await _facts(list[0]), expected);
  }
});

Deno.test("a default plugin object whose tools() is async gives its tools", async () => {
  const plugin = {
    tools: () => Promise.resolve([_echoConfig({ name: "A" }), _echoConfig({ name: "B" })]),
  };
  const { tools, problems } = await collectTools({ default: plugin });
  assert.deepEqual(problems, []);
  assert.deepEqual(tools.map((t) => t.name), ["A", "B"]);
});

Deno.test("a default plugin whose tools() throws or returns a non-array is a problem, not an exception", async () => {
  const threw = await collectTools({
    default: {
      tools: () => {
        throw new Error("no config");
      },
    },
  });
  assert.deepEqual(threw.tools, []);
  assert.deepEqual(threw.problems, ["default.tools() threw: no config"]);
  const notArray = await collectTools({ default: { tools: () => ({ name: "Echo" }) } });
  assert.deepEqual(notArray.problems, ["default.tools() must return an array of tool configs"]);
});

Deno.test("TOOL_CONFIGS that is not an array is a problem showing a valid export", async () => {
  const { tools, problems } = await collectTools({ TOOL_CONFIGS: _echoConfig() });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 1);
  assert.match(problems[0], /^TOOL_CONFIGS must be an array/);
  assert.ok(problems[0].includes("export const TOOL_CONFIGS = ["), problems[0]);
});

Deno.test("module tools may be sync or async and return a string or an object", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIGS: [
      _echoConfig({ name: "SyncString", function: (a: { text: string }) => `s:${a.text}` }),
      _echoConfig({
        name: "AsyncString",
        function: (a: { text: string }) => Promise.resolve(`a:${a.text}`),
      }),
      _echoConfig({ name: "SyncObject", function: (a: { text: string }) => ({ v: a.text }) }),
      _echoConfig({
        name: "AsyncObject",
        function: async (a: { text: string }) => {
          await Promise.resolve();
          return { v: a.text };
        },
      }),
    ],
  });
  assert.deepEqual(problems, []);
  const results = [];
  for (const t of tools) results.push(await t.invoke({ text: "x" }, testContext()));
  assert.deepEqual(results, ["s:x", "a:x", { v: "x" }, { v: "x" }]);
});

Deno.test("a module tool receives the call context as its second argument", async () => {
  const { tools: [t] } = await collectTools({
    TOOL_CONFIG: _echoConfig({
      function: (_a: unknown, ctx: { workspace: string }) => ctx.workspace,
    }),
  });
  assert.equal(await t.invoke({ text: "x" }, testContext({ workspace: "/some/ws" })), "/some/ws");
});

Deno.test("a class tool sees its context and reports through it", async () => {
  @tool({ permissions: "r", description: "Reports" })
  class Reports extends BaseTool {
    run() {
      this.reportStart("starting");
      this.reportInfo("info");
      return { workspace: this.context?.workspace, aborted: this.signal.aborted };
    }
  }
  const { tools: [t] } = await collectTools({ Reports });
  const ctx = testContext({ workspace: "/ws" });
  assert.deepEqual(await t.invoke({}, ctx), { workspace: "/ws", aborted: false });
  assert.deepEqual(ctx.reports, [
    { kind: "start", message: "starting" },
    { kind: "info", message: "info" },
  ]);
});

Deno.test("an async shouldLoad() returning true loads the class tool", async () => {
  @tool({ description: "Async ok" })
  class AsyncOk extends BaseTool {
    static override shouldLoad() {
      return Promise.resolve(true);
    }
    run() {
      return "ok";
    }
  }
  const { tools: [t] } = await collectTools({ AsyncOk });
  assert.deepEqual(await t.shouldLoad(), { load: true });
});

Deno.test("shouldLoad() returning false gives {load:false, reason: skipReason}", async () => {
  @tool({ description: "Never loads" })
  class Never extends BaseTool {
    static override shouldLoad() {
      this.skipReason = "not on this machine";
      return false;
    }
    run() {
      return "unreachable";
    }
  }
  const { tools: [t] } = await collectTools({ Never });
  assert.deepEqual(await t.shouldLoad(), { load: false, reason: "not on this machine" });
});

Deno.test("shouldLoad() returning false without a skipReason still gives a reason", async () => {
  @tool({ description: "Never loads, silently" })
  class Silent extends BaseTool {
    static override shouldLoad() {
      return Promise.resolve(false);
    }
    run() {
      return "unreachable";
    }
  }
  const { tools: [t] } = await collectTools({ Silent });
  assert.deepEqual(await t.shouldLoad(), { load: false, reason: "shouldLoad() returned false" });
});

Deno.test("shouldLoad() that throws gives load:false with the exception message and never throws", async () => {
  @tool({ description: "Throws in shouldLoad" })
  class Thrower extends BaseTool {
    static override shouldLoad(): boolean {
      throw new Error("probe exploded");
    }
    run() {
      return "unreachable";
    }
  }
  @tool({ description: "Rejects in shouldLoad" })
  class Rejecter extends BaseTool {
    static override shouldLoad(): Promise<boolean> {
      return Promise.reject(new Error("async probe exploded"));
    }
    run() {
      return "unreachable";
    }
  }
  const { tools, problems } = await collectTools({ Thrower, Rejecter });
  assert.deepEqual(problems, []);
  const [a, b] = tools;
  const da = await a.shouldLoad();
  const db = await b.shouldLoad();
  assert.equal(da.load, false);
  assert.equal(db.load, false);
  assert.ok(!da.load && da.reason.includes("probe exploded"), JSON.stringify(da));
  assert.ok(!db.load && db.reason.includes("async probe exploded"), JSON.stringify(db));
});

Deno.test("a bad permission letter is a problem naming the tool and the letter", async () => {
  @tool({ permissions: "rq", description: "Bad letters" })
  class BadClass extends BaseTool {
    run() {
      return "x";
    }
  }
  const { tools, problems } = await collectTools({
    BadClass,
    TOOL_CONFIGS: [_echoConfig({ name: "BadConfig", permissions: "rq" })],
  });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 2);
  assert.match(problems[0], /^export BadClass: /);
  assert.ok(problems[0].includes('Tool "BadClass"'), problems[0]);
  assert.ok(problems[0].includes('"q"'), problems[0]);
  assert.match(problems[1], /^TOOL_CONFIGS\[0\]: /);
  assert.ok(problems[1].includes('Tool "BadConfig"'), problems[1]);
  assert.ok(problems[1].includes('"q"'), problems[1]);
});

Deno.test("permissions that are not a string are a problem", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIG: _echoConfig({ permissions: 7 as unknown as string }),
  });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 1);
  assert.ok(problems[0].includes('Tool "Echo": permissions must be a string'), problems[0]);
});

Deno.test("a name with a space, of 65 characters, or empty is a problem", async () => {
  const bad = ["has space", "a".repeat(65), ""];
  const { tools, problems } = await collectTools({
    TOOL_CONFIGS: bad.map((name) => _echoConfig({ name })),
  });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 3);
  bad.forEach((name, i) => {
    assert.ok(problems[i].startsWith(`TOOL_CONFIGS[${i}]: tool name ${JSON.stringify(name)}`));
    assert.ok(problems[i].includes("at most 64"), problems[i]);
  });
});

Deno.test("a name of exactly 64 allowed characters is accepted", async () => {
  const name = "a.b-c_D9".repeat(8);
  assert.equal(name.length, 64);
  const { tools, problems } = await collectTools({ TOOL_CONFIG: _echoConfig({ name }) });
  assert.deepEqual(problems, []);
  assert.equal(tools[0].name, name);
});

Deno.test("a class tool's name override with a space is a problem", async () => {
  @tool({ name: "bad name", description: "Bad override" })
  class Fine extends BaseTool {
    run() {
      return "x";
    }
  }
  const { tools, problems } = await collectTools({ Fine });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 1);
  assert.ok(problems[0].startsWith('export Fine: tool name "bad name"'), problems[0]);
});

Deno.test("a missing, empty or blank description is a problem naming the tool", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIGS: [
      _echoConfig({ name: "NoDesc", description: undefined as unknown as string }),
      _echoConfig({ name: "EmptyDesc", description: "" }),
      _echoConfig({ name: "BlankDesc", description: "   " }),
    ],
  });
  assert.deepEqual(tools, []);
  assert.deepEqual(problems, [
    'TOOL_CONFIGS[0]: Tool "NoDesc": description is missing or empty',
    'TOOL_CONFIGS[1]: Tool "EmptyDesc": description is missing or empty',
    'TOOL_CONFIGS[2]: Tool "BlankDesc": description is missing or empty',
  ]);
});

Deno.test("an input_schema that is not a zod object is a problem", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIGS: [
      _echoConfig({ name: "ZodString", input_schema: z.string() }),
      _echoConfig({ name: "PlainObject", input_schema: { text: "string" } as never }),
    ],
  });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 2);
  assert.ok(problems[0].includes('Tool "ZodString": input schema must be a zod object'));
  assert.ok(problems[1].includes('Tool "PlainObject": input schema must be a zod object'));
});

Deno.test("a @tool class whose input is not a zod object is a problem", async () => {
  @tool({ description: "Bad input", input: z.array(z.string()) })
  class BadInput extends BaseTool {
    run() {
      return "x";
    }
  }
  const { tools, problems } = await collectTools({ BadInput });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 1);
  assert.ok(problems[0].includes('Tool "BadInput": input schema must be a zod object'));
});

Deno.test("a config without a function, or that is not an object, is a problem", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIGS: [{ name: "NoFn", description: "No function" }, "Echo", null],
  });
  assert.deepEqual(tools, []);
  assert.equal(problems.length, 3);
  assert.equal(problems[0], 'TOOL_CONFIGS[0]: Tool "NoFn": "function" must be a function');
  assert.match(problems[1], /^TOOL_CONFIGS\[1\]: a tool config must be an object/);
  assert.match(problems[2], /^TOOL_CONFIGS\[2\]: a tool config must be an object/);
});

Deno.test("a module with a bad tool still yields its good tools", async () => {
  @tool({ permissions: "r", description: "Good class" })
  class GoodClass extends BaseTool {
    run() {
      return "ok";
    }
  }
  @tool({ permissions: "z", description: "Bad class" })
  class BadClass extends BaseTool {
    run() {
      return "bad";
    }
  }
  const { tools, problems } = await collectTools({
    GoodClass,
    BadClass,
    TOOL_CONFIGS: [
      _echoConfig({ name: "Good1" }),
      _echoConfig({ name: "bad name" }),
      _echoConfig({ name: "Good2" }),
    ],
  });
  assert.deepEqual(tools.map((t) => t.name).sort(), ["Good1", "Good2", "GoodClass"]);
  assert.equal(problems.length, 2);
  assert.ok(problems.some((p) => p.startsWith("export BadClass:")), problems.join("\n"));
  assert.ok(problems.some((p) => p.startsWith("TOOL_CONFIGS[1]:")), problems.join("\n"));
});

Deno.test("exports that are neither tools nor tool configs are ignored", async () => {
  class NotATool extends BaseTool {
    run() {
      return "x";
    }
  }
  const { tools, problems } = await collectTools({ NotATool, helper: () => 1, VERSION: "1.0" });
  assert.deepEqual(tools, []);
  assert.deepEqual(problems, []);
});

Deno.test("tools without an input schema accept no arguments (a strict empty object)", async () => {
  const { tools: [t] } = await collectTools({
    TOOL_CONFIG: _echoConfig({ input_schema: undefined }),
  });
  assert.equal(t.input.safeParse({}).success, true);
  assert.equal(t.input.safeParse({ extra: 1 }).success, false);
});

Deno.test("permissions default to none and confirm to false", async () => {
  const { tools: [t] } = await collectTools({
    TOOL_CONFIG: _echoConfig({ permissions: undefined, requires_confirmation: undefined }),
  });
  assert.equal(t.permissions, "");
  assert.equal(t.confirm, false);
});

Deno.test("collectTools lists every breach of one tool at once", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIG: { name: "bad name", description: " ", input_schema: {}, permissions: "rq" },
  });
  assert.equal(tools.length, 0);
  assert.equal(problems.length, 1);
  for (
    const part of [
      /tool name "bad name" does not match/,
      /description is missing or empty/,
      /input schema must be a zod object/,
      /"function" must be a function/,
      /unknown permission letter "q"/,
    ]
  ) assert.match(problems[0], part);
});

Deno.test("a tool's task support is carried as given; a value that is none of MCP's is refused, naming it", async () => {
  const { tools, problems } = await collectTools({
    TOOL_CONFIGS: [
      _echoConfig({ task_support: "required", task_after_input: true }),
      _echoConfig({ name: "Later", task_support: "sometimes" as never }),
      _echoConfig({ name: "Plain" }),
    ],
  });
  assert.deepEqual(tools.map((t) => [t.name, t.taskSupport, t.taskAfterInput]), [
    ["Echo", "required", true],
    ["Plain", undefined, undefined],
  ]);
  assert.equal(problems.length, 1);
  assert.match(problems[0], /"Later": task support must be "optional", "required" or "forbidden"/);
});
