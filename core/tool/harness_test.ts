import assert from "node:assert/strict";
import { join } from "node:path";
import { z } from "zod";
import { renderResult, runHarness } from "./harness.ts";
import { describeParams } from "./_harness_params.ts";
import { BaseTool, collectTools, tool } from "./tool.ts";

const _wordCount = new URL("../../toolsets/files/word_count.ts", import.meta.url).pathname;

async function _deno(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function _withWorkspace(fn: (ws: string) => Promise<void>): Promise<void> {
  const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-ws-" }));
  try {
    await fn(ws);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
}

Deno.test("harness: word_count.ts <file> --json prints only the result JSON and exits 0", () =>
  _withWorkspace(async (ws) => {
    await Deno.writeTextFile(join(ws, "n.txt"), "one two\nthree\n");
    const r = await _deno([_wordCount, "n.txt", "--json"], ws);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      success: true,
      filepath: "n.txt",
      lines: 2,
      words: 3,
      chars: 14,
      bytes: 14,
    });
    assert.match(r.stderr, /Counting n\.txt/); // reports go to stderr
  }));

Deno.test("harness: an unknown flag is a usage error with exit code 2", () =>
  _withWorkspace(async (ws) => {
    const r = await _deno([_wordCount, "n.txt", "--bogus"], ws);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /Unknown option '--bogus'/);
  }));

Deno.test("harness: --help lists the parameters with their descriptions", () =>
  _withWorkspace(async (ws) => {
    const r = await _deno([_wordCount, "--help"], ws);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Usage: WordCount <filepath>/);
    assert.match(
      r.stdout,
      /--filepath <string> +Path of the file to count, relative to the workspace/,
    );
    assert.match(r.stdout, /Permissions: r \(read\)/);
  }));

Deno.test("harness: a failing tool exits 1 with its error on stderr", () =>
  _withWorkspace(async (ws) => {
    const r = await _deno([_wordCount, "missing.txt"], ws);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Cannot run tool "WordCount": file "missing.txt" not found/);
  }));

// In-process tests of the flag derivation.

const _input = z.object({
  name: z.string().describe("Who to greet"),
  times: z.number().int().default(1).describe("How often"),
  loud: z.boolean().default(true).describe("Shout"),
  tags: z.array(z.string()).optional().describe("Labels"),
  mode: z.enum(["a", "b"]).default("a").describe("Mode"),
  max_len: z.number().optional().describe("Longest"),
});

@tool({ description: "Greet someone", input: _input })
class Greet extends BaseTool {
  run(args: z.infer<typeof _input>) {
    if (args.name === "fail") return { success: false, error: 'Cannot run tool "Greet": asked to' };
    return { success: true, ...args };
  }
}

async function _run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runHarness(Greet, argv, {
    stdout: (t) => out += t,
    stderr: (t) => err += t,
    setExitCode: false,
  });
  return { code, out, err };
}

Deno.test("harness parses numbers, --no-flag booleans, repeated arrays, enums and kebab-case", async () => {
  const r = await _run([
    "Ann",
    "--times",
    "3",
    "--no-loud",
    "--tags",
    "x",
    "--tags",
    "y",
    "--mode",
    "b",
    "--max-len",
    "2.5",
    "--json",
  ]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out), {
    success: true,
    name: "Ann",
    times: 3,
    loud: false,
    tags: ["x", "y"],
    mode: "b",
    max_len: 2.5,
  });
});

Deno.test("harness rejects a non-number, a missing required value and extra positionals with exit 2", async () => {
  const nan = await _run(["Ann", "--times", "many"]);
  assert.equal(nan.code, 2);
  assert.match(nan.err, /--times expects a number, got "many"/);
  const missing = await _run(["--times", "2"]);
  assert.equal(missing.code, 2);
  assert.match(missing.err, /name: Required/);
  const extra = await _run(["Ann", "Bob"]);
  assert.equal(extra.code, 2);
  assert.match(extra.err, /unexpected argument "Bob"/);
  const badEnum = await _run(["Ann", "--mode", "z"]);
  assert.equal(badEnum.code, 2);
});

Deno.test("harness prints a readable result without --json and exits 1 on success:false", async () => {
  const ok = await _run(["--name", "Ann"]);
  assert.equal(ok.code, 0);
  assert.match(ok.out, /^success: true\nname: Ann\ntimes: 1\nloud: true\n/);
  const failed = await _run(["fail"]);
  assert.equal(failed.code, 1);
  assert.equal(failed.out, "");
  assert.match(failed.err, /Cannot run tool "Greet": asked to/);
});

Deno.test("describeParams derives kinds, defaults and the required flag from the schema", async () => {
  const { tools: [def] } = await collectTools({ Greet });
  const byKey = Object.fromEntries(describeParams(def).map((p) => [p.key, p]));
  assert.equal(byKey.name.kind, "string");
  assert.equal(byKey.name.required, true);
  assert.equal(byKey.times.kind, "number");
  assert.equal(byKey.times.defaultValue, 1);
  assert.equal(byKey.loud.kind, "boolean");
  assert.equal(byKey.tags.kind, "array");
  assert.deepEqual(byKey.mode.choices, ["a", "b"]);
  assert.equal(byKey.max_len.required, false);
});

Deno.test("renderResult indents multi-line text and lists arrays", () => {
  assert.equal(
    renderResult({ content: "a\nb\n", items: [{ x: 1 }] }),
    "content:\n  a\n  b\nitems: (1)\n  x=1\n",
  );
});

Deno.test("harness: an array flag takes one JSON array too, and a JSON array of objects is a list of objects", async () => {
  const r = await _run(["Ann", "--tags", '["x","y"]', "--tags", "z", "--json"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out).tags, ["x", "y", "z"]);
  const items = z.object({ items: z.array(z.object({ sku: z.string() })).default([]) });
  const cfg = {
    name: "Order",
    description: "Count items",
    input_schema: items,
    function: (a: z.infer<typeof items>) => ({ success: true, skus: a.items.map((i) => i.sku) }),
  };
  let out = "";
  let err = "";
  const io = { stdout: (t: string) => out += t, stderr: (t: string) => err += t };
  const code = await runHarness(cfg, ["--items", '[{"sku":"a"},{"sku":"b"}]', "--json"], {
    ...io,
    setExitCode: false,
  });
  assert.equal(code, 0, err);
  assert.deepEqual(JSON.parse(out).skus, ["a", "b"]);
  out = "";
  await runHarness(cfg, ["--help"], { ...io, setExitCode: false });
  assert.match(
    out,
    /--items <json> \.\.\. .*repeat the flag for each item, or give one JSON array/,
  );
});

Deno.test("harness: a bare argument sets the first string parameter even when it has a default", async () => {
  const input = z.object({ path: z.string().default(".").describe("Folder") });
  const cfg = {
    name: "Scan",
    description: "Scan",
    input_schema: input,
    function: (a: unknown) => a,
  };
  let out = "";
  const code = await runHarness(cfg, ["src", "--json"], {
    stdout: (t) => out += t,
    stderr: () => {},
    setExitCode: false,
  });
  assert.equal(code, 0);
  assert.equal(JSON.parse(out).path, "src");
  out = "";
  await runHarness(cfg, ["--help"], { stdout: (t) => out += t, setExitCode: false });
  assert.match(out, /^Usage: Scan \[path\] \[options\]/);
});

Deno.test("harness: a module's TOOL_SETUP gets the section, is_configured false and shouldLoad refusals are refused with the reason", async () => {
  let currency = "";
  const ns = {
    TOOL_SETUP: (c: { currency?: string }) => (currency = c.currency ?? ""),
    is_configured: () => currency !== "",
    TOOL_CONFIGS: [{
      name: "Rate",
      description: "A rate",
      function: () => ({ success: true, currency }),
    }],
  };
  const run = async (argv: string[], setup?: object) => {
    let out = "";
    let err = "";
    const code = await runHarness(ns, argv, {
      stdout: (t) => out += t,
      stderr: (t) => err += t,
      setExitCode: false,
      setup: { plugin: "rates", ...setup },
    });
    return { code, out, err };
  };
  const ok = await run(["--json"], { config: { currency: "EUR" } });
  assert.equal(ok.code, 0, ok.err);
  assert.equal(JSON.parse(ok.out).currency, "EUR");
  const no = await run(["--json"], { configFrom: "{} (corral.json has no services.rates)" });
  assert.equal(no.code, 1);
  assert.deepEqual(JSON.parse(no.out), {
    success: false,
    error: "rates is not configured (is_configured() returned false); TOOL_SETUP got {} " +
      "(corral.json has no services.rates)",
  });
  assert.match(no.err, /^Error: rates is not configured/);
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.out, /Usage: Rate/);
  assert.match(help.err, /Note: rates is not configured .*corral would not load it/);

  @tool({ description: "Never here" })
  class Absent extends BaseTool {
    static override shouldLoad() {
      this.skipReason = "needs a printer";
      return false;
    }
    run() {
      return { success: true };
    }
  }
  let err = "";
  const code = await runHarness(Absent, [], {
    stdout: () => {},
    stderr: (t) => err += t,
    setExitCode: false,
  });
  assert.equal(code, 1);
  assert.match(err, /Tool "Absent" is not loaded: needs a printer/);
});
