import assert from "node:assert/strict";
import { join } from "node:path";
import plugin, { CORE_DIR, MAX_FUNCTION_LINES, watched } from "./function_length.ts";

/** The rule's findings on `source` as a file of core/ (or at `path`). */
function lint(source: string, path = `${CORE_DIR}cli/sample.ts`): Deno.lint.Diagnostic[] {
  return Deno.lint.runPlugin(plugin, path, source);
}

/** A function declaration of exactly `lines` lines. */
function declaration(name: string, lines: number): string {
  return `export function ${name}(): number {\n${"  void 0;\n".repeat(lines - 3)}  return 1;\n}\n`;
}

Deno.test("a function of core/ over 80 lines is reported with its name and length", () => {
  const found = lint(declaration("tooLong", 120));
  assert.equal(found.length, 1);
  assert.equal(found[0].id, "corral/function-length");
  assert.equal(
    found[0].message,
    'Function "tooLong" is 120 lines; core/ keeps each function to at most 80',
  );
});

Deno.test("a short function and one of exactly 80 lines pass; 81 lines do not", () => {
  assert.deepEqual(lint(declaration("short", 12)), []);
  assert.deepEqual(lint(declaration("atTheLimit", MAX_FUNCTION_LINES)), []);
  const over = lint(declaration("oneOver", MAX_FUNCTION_LINES + 1));
  assert.equal(over.length, 1);
  assert.match(over[0].message, /"oneOver" is 81 lines/);
});

Deno.test("methods, private methods, arrows and function expressions are measured and named", () => {
  const body = "    void 0;\n".repeat(90);
  const source = [
    "export class Runner {",
    `  async #call(): Promise<void> {\n${body}  }`,
    `  get size(): number {\n${body}    return 1;\n  }`,
    "}",
    `export const arrow = (): void => {\n${body}};`,
    `export const table = { run: function (): void {\n${body}} };`,
    `export default function (): void {\n${body}}`,
    "",
  ].join("\n");
  const names = lint(source).map((d) => d.message.match(/^Function "([^"]+)"/)?.[1]);
  assert.deepEqual(names, ["#call", "size", "arrow", "run", "(anonymous)"]);
});

Deno.test("a long function nested in a long one: each is reported, by its own name", () => {
  const inner = `  const inner = () => {\n${"    void 0;\n".repeat(85)}  };\n`;
  const source = `export function outer(): void {\n${inner}${"  void 0;\n".repeat(5)}}\n`;
  const names = lint(source).map((d) => d.message.match(/^Function "([^"]+)"/)?.[1]);
  assert.deepEqual(names, ["outer", "inner"]);
});

Deno.test("tests in core/ and files outside core/ are not judged", () => {
  const long = declaration("tooLong", 200);
  assert.equal(lint(long).length, 1, "control: the same function in core/ is reported");
  assert.deepEqual(lint(long, `${CORE_DIR}cli/sample_test.ts`), []);
  assert.deepEqual(lint(long, join(CORE_DIR, "..", "tests", "sample.ts")), []);
  assert.deepEqual(lint(long, join(CORE_DIR, "..", "tools", "lint", "sample.ts")), []);
  assert.equal(watched(`${CORE_DIR}registry/call_runner.ts`), true);
  assert.equal(watched(`${CORE_DIR}registry/catalog_test.ts`), false);
});

Deno.test("deno.json runs the rule in deno lint", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(CORE_DIR, "..", "deno.json")));
  assert.ok(
    config.lint?.plugins?.includes("./tools/lint/function_length.ts"),
    `deno.json lint.plugins: ${JSON.stringify(config.lint?.plugins)}`,
  );
});

Deno.test("no function in core/ (tests aside) is over 80 lines", async () => {
  const files: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = join(dir, e.name);
      if (e.isDirectory) await walk(path);
      else if (e.isFile && watched(path)) files.push(path);
    }
  };
  await walk(CORE_DIR);
  assert.ok(files.length > 100, `core/ has ${files.length} files`);
  const found = [];
  for (const file of files) {
    for (const d of lint(await Deno.readTextFile(file), file)) {
      found.push(`${file.slice(CORE_DIR.length)}: ${d.message}`);
    }
  }
  assert.deepEqual(found, []);
});

Deno.test("main.ts, corral's entry, stays at most 150 lines", async () => {
  const main = await Deno.readTextFile(join(CORE_DIR, "..", "main.ts"));
  const lines = main.split("\n").length - (main.endsWith("\n") ? 1 : 0);
  assert.ok(lines > 0 && lines <= 150, `main.ts has ${lines} lines`);
});
