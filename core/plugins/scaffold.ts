/**
 * `corral new NAME --permissions r [--dir DIR] [--style class|module]`:
 * write a working tool file and its test. The tool reads a file of the
 * workspace when it has the letter `r`, and echoes its text otherwise; the
 * generated file passes `corral check` and its test passes as written.
 *
 * @module
 */
import { isAbsolute, join, relative, resolve } from "node:path";
import { CORE_DIR, INSTALL_DIR } from "../config/install_dir.ts";
import { parsePermissions } from "../tool/permissions.ts";
import { TOOL_NAME_PATTERN } from "../tool/tool.ts";

/** Authoring styles. */
export type ToolStyle = "class" | "module";

/** Options of {@link scaffoldTool}. */
export interface ScaffoldOptions {
  /** The tool name (`WordCount`); the file is its snake_case form (`word_count.ts`). */
  name: string;
  /** Permission letters, e.g. `"r"` (default none). */
  permissions?: string;
  /** Where to write the files. */
  dir: string;
  /** `class` (default) or `module`. */
  style?: ToolStyle;
  /** Replace existing files (default: refuse). */
  overwrite?: boolean;
}

/** What {@link scaffoldTool} wrote. */
export interface Scaffolded {
  /** The tool file. */
  file: string;
  /** Its test. */
  test: string;
  /** The plugin name (file stem): the key of its entry in permissions.json and of `services`. */
  stem: string;
  /** The canonical letters. */
  permissions: string;
  /** The permissions.json entry the letters need, or undefined for none. */
  policyHint?: string;
}

/**
 * `WordCount` → `word_count`, `get.url` → `get_url`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { snakeCase } from "./scaffold.ts";
 * assert.ok(snakeCase("WordCount") === "word_count");
 * assert.ok(snakeCase("HTTPGet-v2") === "http_get_v2");
 * ```
 */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase();
}

/**
 * Write `<dir>/<name>.ts` and `<dir>/<name>_test.ts`. Throws a `TypeError`
 * for a bad name, letters or style, and refuses to overwrite files.
 */
export async function scaffoldTool(options: ScaffoldOptions): Promise<Scaffolded> {
  const { name } = options;
  if (!TOOL_NAME_PATTERN.test(name)) {
    throw new TypeError(`tool name "${name}" does not match ${TOOL_NAME_PATTERN}`);
  }
  const style = options.style ?? "class";
  if (style !== "class" && style !== "module") {
    throw new TypeError(`--style must be class or module, got "${style}"`);
  }
  if (style === "class" && !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name)) {
    throw new TypeError(
      `a class tool's name must be a valid class name, got "${name}" (use --style module)`,
    );
  }
  const permissions = parsePermissions(options.permissions ?? "", name);
  const stem = snakeCase(name);
  if (!stem) throw new TypeError(`cannot make a file name from "${name}"`);
  const dir = resolve(options.dir);
  await Deno.mkdir(dir, { recursive: true });
  const file = join(dir, `${stem}.ts`);
  const test = join(dir, `${stem}_test.ts`);
  if (!options.overwrite) {
    for (const f of [file, test]) {
      if (await _exists(f)) throw new TypeError(`${f} already exists (not overwritten)`);
    }
  }
  const core = coreImportBase(dir);
  const spec: _Spec = { name, permissions, stem, core, reads: permissions.includes("r") };
  await Deno.writeTextFile(file, style === "class" ? _classTool(spec) : _moduleTool(spec));
  await Deno.writeTextFile(test, _testFile(spec));
  return { file, test, stem, permissions, policyHint: policyHint(stem, permissions) };
}

/**
 * How a file in `dir` imports corral's core: a relative path inside corral,
 * else the absolute path (`/opt/corral/core`).
 */
export function coreImportBase(dir: string): string {
  const rel = relative(resolve(dir), CORE_DIR);
  if (!isAbsolute(rel) && relative(INSTALL_DIR, resolve(dir)).split("/")[0] !== "..") {
    return rel.startsWith(".") ? rel : `./${rel}`;
  }
  return CORE_DIR;
}

/**
 * The permissions.json entry a plugin with these letters needs (plugins get
 * nothing by default), or undefined when it needs none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { policyHint } from "./scaffold.ts";
 * assert.ok(policyHint("line_count", "r")!.includes('"read": ["."]'));
 * assert.ok(policyHint("echo", "") === undefined);
 * ```
 */
export function policyHint(stem: string, permissions: string): string | undefined {
  if (!permissions) return undefined;
  const parts: string[] = [];
  if (permissions.includes("r")) parts.push(`"read": ["."]`);
  if (permissions.includes("w")) parts.push(`"write": ["."]`);
  if (permissions.includes("x")) parts.push(`"run": ["COMMAND"]`);
  if (permissions.includes("n")) parts.push(`"net": ["HOST"]`);
  return `"plugins": { "${stem}": { ${parts.join(", ")} } }`;
}

interface _Spec {
  name: string;
  permissions: string;
  stem: string;
  core: string;
  reads: boolean;
}

function _header(s: _Spec): string {
  const letters = s.permissions || "none";
  return `/**
 * ${s.name}: ${s.reads ? "count the lines and bytes of a text file" : "echo a text back"}.
 * Generated by \`corral new\`; change it to do your work.
 *
 * Permissions: ${letters}.${
    s.permissions
      ? ` Plugins get nothing by default: grant it in permissions.json with\n * ${
        policyHint(s.stem, s.permissions)
      }.`
      : ""
  }
 * Check it:   corral check ${s.stem}.ts
 * Test it:    deno test --allow-read --allow-write --config=${
    join(INSTALL_DIR, "deno.json")
  } ${s.stem}_test.ts
 * Run alone:  deno run -A --config=${join(INSTALL_DIR, "deno.json")} ${s.stem}.ts --help
 *
 * @module
 */
`;
}

const _READ_INPUT = `const input = z.object({
  path: z.string().min(1).describe("File to read, relative to the workspace"),
});`;
const _ECHO_INPUT = `const input = z.object({
  text: z.string().describe("The text to echo"),
});`;

function _classTool(s: _Spec): string {
  const imports = s.reads
    ? "BaseTool, fsError, resolveInside, runHarness, tool"
    : "BaseTool, runHarness, tool";
  const body = s.reads
    ? `  /** Read the file inside the granted folders and count. */
  async run({ path }: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    this.reportStart(\`Reading \${path}\`, { end: "" });
    const real = await resolveInside(path, ctx.grant.read, ctx.workspace);
    const bytes = await Deno.readFile(real).catch((err) => Promise.reject(fsError(err, path)));
    const text = new TextDecoder().decode(bytes);
    const lines = text === "" ? 0 : text.split("\\n").length - (text.endsWith("\\n") ? 1 : 0);
    this.reportResult(\` \${lines} lines\`);
    return { success: true, path, lines, bytes: bytes.length };
  }`
    : `  /** Echo the text back. */
  run({ text }: z.infer<typeof input>): Record<string, unknown> {
    this.reportInfo(\`Echoing \${text.length} characters\`);
    return { success: true, text, length: text.length };
  }`;
  return `${_header(s)}import { z } from "zod";
${_importLine(imports, `${s.core}/mod.ts`)}

${s.reads ? _READ_INPUT : _ECHO_INPUT}

/** ${_summary(s)} */
@tool({
  permissions: "${s.permissions}",
  description: "${_summary(s)}",
  input,
})
export class ${s.name} extends BaseTool {
${body}
}

if (import.meta.main) await runHarness(${s.name});
`;
}

function _moduleTool(s: _Spec): string {
  const imports = s.reads
    ? "fsError, resolveInside, runHarness, type ToolCallContext, type ToolConfig"
    : "runHarness, type ToolConfig";
  const importText = _importLine(imports, `${s.core}/mod.ts`);
  const fn = s.reads
    ? `    function: async ({ path }: z.infer<typeof input>, ctx: ToolCallContext) => {
      ctx.report("start", \`Reading \${path}\`);
      const real = await resolveInside(path, ctx.grant.read, ctx.workspace);
      const bytes = await Deno.readFile(real).catch((err) => Promise.reject(fsError(err, path)));
      const text = new TextDecoder().decode(bytes);
      const lines = text === "" ? 0 : text.split("\\n").length - (text.endsWith("\\n") ? 1 : 0);
      return { success: true, path, lines, bytes: bytes.length };
    },`
    : `    function: ({ text }: z.infer<typeof input>) => ({ success: true, text, length: text.length }),`;
  return `${_header(s)}import { z } from "zod";
${importText}

${s.reads ? _READ_INPUT : _ECHO_INPUT}

/** The tools of this plugin. */
export const TOOL_CONFIGS: ToolConfig[] = [
  {
    name: "${s.name}",
    description: "${_summary(s)}",
    permissions: "${s.permissions}",
    input_schema: input,
${fn}
  },
];

if (import.meta.main) await runHarness(TOOL_CONFIGS[0]);
`;
}

/** An import statement as `deno fmt` writes it (wrapped past 100 columns). */
function _importLine(names: string, from: string): string {
  const line = `import { ${names} } from "${from}";`;
  if (line.length <= 100) return line;
  return `import {\n${names.split(", ").map((n) => `  ${n},\n`).join("")}} from "${from}";`;
}

function _summary(s: _Spec): string {
  return s.reads
    ? "Count the lines and bytes of a text file in the workspace."
    : "Echo a text back with its length.";
}

function _testFile(s: _Spec): string {
  const cases = s.reads
    ? `  const workspace = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.writeTextFile(\`\${workspace}/notes.txt\`, "one\\ntwo\\n");
    const grant = { read: [workspace], write: [], run: [], net: [] };
    const ok = await invokeTool(tool, { path: "notes.txt" }, testContext({ workspace, grant }));
    assert.equal(ok.success, true, ok.error);
    assert.equal(ok.lines, 2);
    assert.equal(ok.bytes, 8);
    const context = testContext({ workspace, grant });
    const outside = await invokeTool(tool, { path: "/etc/hostname" }, context);
    assert.equal(outside.success, false);
  } finally {
    await Deno.remove(workspace, { recursive: true });
  }`
    : `  const ok = await invokeTool(tool, { text: "hello" }, testContext());
  assert.equal(ok.success, true, ok.error);
  assert.equal(ok.text, "hello");
  assert.equal(ok.length, 5);
  const bad = await invokeTool(tool, { text: 42 }, testContext());
  assert.equal(bad.success, false);`;
  return `// Tests of ${s.stem}.ts, generated by \`corral new\`. They run the tool directly (no sandbox):
//   deno test --allow-read --allow-write --config=${
    join(INSTALL_DIR, "deno.json")
  } ${s.stem}_test.ts
import assert from "node:assert/strict";
import { collectTools, invokeTool, testContext } from "${s.core}/testing.ts";
import * as plugin from "./${s.stem}.ts";

Deno.test("${s.name} follows the tool contract and ${
    s.reads ? "counts a workspace file, refusing paths outside its grant" : "echoes its text"
  }", async () => {
  const { tools, problems } = await collectTools(plugin);
  assert.deepEqual(problems, []);
  const tool = tools.find((t) => t.name === "${s.name}");
  assert.ok(tool, "the module exports ${s.name}");
  assert.equal(tool.permissions, "${s.permissions}");
${cases}
});
`;
}

async function _exists(p: string): Promise<boolean> {
  try {
    await Deno.lstat(p);
    return true;
  } catch {
    return false;
  }
}
