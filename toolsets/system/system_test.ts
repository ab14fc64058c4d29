import assert from "node:assert/strict";
import { collectTools, invokeTool, testContext, type ToolDefinition } from "../../core/tool/mod.ts";
import { MAX_STREAM_BYTES, missingReason } from "./_interpreter.ts";
import * as bash from "./run_bash_code.ts";
import * as python from "./run_python_code.ts";

async function _tool(ns: Record<string, unknown>): Promise<ToolDefinition> {
  const { tools, problems } = await collectTools(ns);
  assert.deepEqual(problems, []);
  return tools[0];
}

const RunBashCode = await _tool(bash);
const RunPythonCode = await _tool(python);
const hasPython = (await RunPythonCode.shouldLoad()).load;

async function _withWorkspace(fn: (ws: string) => Promise<void>): Promise<void> {
  const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-ws-" }));
  try {
    await fn(ws);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
}

Deno.test("interpreter tools declare rwx: their processes read and write exactly the r and w grants", () => {
  assert.equal(RunBashCode.permissions, "rwx");
  assert.equal(RunPythonCode.permissions, "rwx");
});

Deno.test("RunBashCode loads when bash is installed", async () => {
  assert.deepEqual(await RunBashCode.shouldLoad(), { load: true });
});

Deno.test("missingReason names an interpreter that is not on PATH, without throwing", async () => {
  assert.equal(
    await missingReason("corral-no-such-shell"),
    "corral-no-such-shell not found on PATH",
  );
});

Deno.test("RunBashCode returns stdout, stderr and exit code, run in the workspace", () =>
  _withWorkspace(async (ws) => {
    const res = await invokeTool(
      RunBashCode,
      { code: "pwd; echo oops >&2" },
      testContext({ workspace: ws }),
    );
    assert.equal(res.success, true);
    assert.equal(res.exit_code, 0);
    assert.equal(res.stdout, `${ws}\n`);
    assert.equal(res.stderr, "oops\n");
    assert.equal(res.timed_out, false);
    assert.equal(res.code, "pwd; echo oops >&2");
  }));

Deno.test("RunBashCode reports a non-zero exit as a failure with the output kept", () =>
  _withWorkspace(async (ws) => {
    const res = await invokeTool(
      RunBashCode,
      { code: "echo partial; exit 4" },
      testContext({ workspace: ws }),
    );
    assert.equal(res.success, false);
    assert.equal(res.exit_code, 4);
    assert.equal(res.stdout, "partial\n");
    assert.match(res.error!, /^Cannot run tool "RunBashCode": the code exited with status 4$/);
  }));

Deno.test("RunBashCode kills code that runs past its timeout", () =>
  _withWorkspace(async (ws) => {
    const res = await invokeTool(
      RunBashCode,
      { code: "sleep 5", timeout: 1 },
      testContext({ workspace: ws }),
    );
    assert.equal(res.success, false);
    assert.equal(res.timed_out, true);
    assert.equal(res.error, 'Cannot run tool "RunBashCode": timed out after 1 s');
  }));

Deno.test("RunBashCode cuts a huge stdout with a truncation marker", () =>
  _withWorkspace(async (ws) => {
    const res = await invokeTool(
      RunBashCode,
      { code: "head -c 150000 /dev/zero | tr '\\0' x" },
      testContext({ workspace: ws }),
    );
    assert.equal(res.truncated, true);
    const out = res.stdout as string;
    assert.ok(out.startsWith("x".repeat(MAX_STREAM_BYTES)));
    assert.ok(out.endsWith(`\n…[truncated ${150_000 - MAX_STREAM_BYTES} bytes]`), out.slice(-60));
  }));

Deno.test("RunBashCode refuses a timeout above 3600 seconds", async () => {
  const res = await invokeTool(RunBashCode, { code: "true", timeout: 3601 }, testContext());
  assert.equal(res.success, false);
  assert.match(res.error!, /invalid arguments: timeout/);
});

Deno.test({
  name: "RunPythonCode runs Python and captures a traceback on stderr",
  ignore: !hasPython,
  fn: () =>
    _withWorkspace(async (ws) => {
      const ok = await invokeTool(
        RunPythonCode,
        { code: "print(6 * 7)" },
        testContext({ workspace: ws }),
      );
      assert.equal(ok.success, true);
      assert.equal(ok.stdout, "42\n");
      const bad = await invokeTool(
        RunPythonCode,
        { code: "raise ValueError('nope')" },
        testContext({ workspace: ws }),
      );
      assert.equal(bad.success, false);
      assert.equal(bad.exit_code, 1);
      assert.match(bad.stderr as string, /ValueError: nope/);
    }),
});
