/**
 * The per-tool command line: `corral harness FILE [ARGS]`, or `deno run -A
 * FILE [ARGS]` of a tool file that ends with `runHarness` (it hands itself
 * over to `corral harness`). Flags come from the tool's zod schema
 * (./_harness_params.ts). `--json` prints the result as JSON on stdout;
 * `--help` prints the usage. A module's `TOOL_SETUP` gets the plugin's
 * config section and `is_configured()` and `shouldLoad()` are asked, as
 * corral does (./harness_setup.ts). Exit codes: 0 success, 1 the tool failed
 * or was refused, 2 usage error.
 *
 * @module
 */
import {
  describeParams,
  parseHarnessArgs,
  positionalParam,
  RESERVED_FLAGS,
} from "./_harness_params.ts";
import { delegateToCorral, type HarnessSetup, moduleSetup, setupFromEnv } from "./harness_setup.ts";
import { invokeTool } from "./invoke.ts";
import { Reporter, type Sink } from "./reporter.ts";
import { type Letter, LETTER_NAMES } from "./permissions.ts";
import { collectTools, type Grant, type ToolDefinition } from "./tool.ts";
import { validateArgs } from "./_validate.ts";

/** Options of {@link runHarness}, mostly for tests. */
export interface HarnessOptions {
  /** Where results and help go (default: stdout). */
  stdout?: Sink;
  /** Where reports and errors go (default: stderr). */
  stderr?: Sink;
  /** Set `Deno.exitCode` (default true). */
  setExitCode?: boolean;
  /** The workspace and the root of the grant (default: the current directory). */
  workspace?: string;
  /** Overrides of the grant (default: read and write the workspace, any command or host). */
  grant?: Partial<Grant>;
  /** The plugin's config section for `TOOL_SETUP` (default: what `corral harness` passed). */
  setup?: HarnessSetup;
}

/** Exit codes of the harness. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const _encoder = new TextEncoder();

/**
 * Run a tool from the command line and return the exit code (also set as
 * `Deno.exitCode`). `target` is a `@tool` class, a `ToolConfig` (or a list
 * of them), or a module namespace; with several tools the first argument
 * names the tool. Called without `argv` at the end of a tool file run alone
 * (`deno run -A FILE`), it hands the run over to `corral harness FILE`,
 * which runs the file's module as corral would (`TOOL_SETUP` with the
 * plugin's section of corral.json, `is_configured()`).
 *
 * @example
 * ```ts
 * // At the end of a tool module:
 * import { runHarness } from "./harness.ts";
 * class WordCount {}
 * if (import.meta.main) await runHarness(WordCount);
 * ```
 */
export async function runHarness(
  target: unknown,
  argv?: string[],
  options: HarnessOptions = {},
): Promise<number> {
  if (argv === undefined && !options.stdout && !options.stderr && !options.setup) {
    const code = await delegateToCorral(Deno.args);
    if (code !== undefined) {
      if (options.setExitCode !== false) Deno.exitCode = code;
      return code;
    }
  }
  argv ??= Deno.args;
  const out = options.stdout ?? ((t: string) => Deno.stdout.writeSync(_encoder.encode(t)));
  const err = options.stderr ?? ((t: string) => Deno.stderr.writeSync(_encoder.encode(t)));
  const code = await _main(target, argv, options, out, err);
  if (options.setExitCode !== false) Deno.exitCode = code;
  return code;
}

async function _main(
  target: unknown,
  argv: string[],
  options: HarnessOptions,
  out: Sink,
  err: Sink,
): Promise<number> {
  const ns = _namespace(target);
  // A module namespace: its TOOL_SETUP and is_configured, as discovery runs them.
  const notReady = _isModule(target)
    ? await moduleSetup(ns, options.setup ?? setupFromEnv())
    : undefined;
  const { tools, problems } = await collectTools(ns);
  for (const p of problems) err(`Error: ${p}\n`);
  if (tools.length === 0) {
    err("Error: no tool found in the harness target\n");
    return EXIT.usage;
  }
  const picked = _pick(tools, argv, out, err);
  if (typeof picked === "number") return picked;
  const { def, args } = picked;

  const params = describeParams(def);
  let parsed: { json: boolean; help: boolean; values: Record<string, unknown> };
  try {
    parsed = await parseHarnessArgs(params, args);
  } catch (e) {
    err(`Error: ${e instanceof Error ? e.message : String(e)}\n`);
    err(`Run with --help for the parameters of ${def.name}.\n`);
    return EXIT.usage;
  }
  const load = await def.shouldLoad();
  const refusal = notReady ??
    (load.load ? undefined : `Tool "${def.name}" is not loaded: ${load.reason}`);
  if (parsed.help) {
    out(usage(def));
    if (refusal) err(`Note: ${refusal}; corral would not load it\n`);
    return EXIT.ok;
  }
  if (refusal) {
    // Refused as corral refuses it: not run, whatever the arguments.
    err(`Error: ${refusal}\n`);
    if (parsed.json) out(JSON.stringify({ success: false, error: refusal }, null, 2) + "\n");
    return EXIT.failed;
  }
  const valid = validateArgs(def.input, parsed.values);
  if (!valid.ok) {
    err(`Error: invalid arguments: ${valid.problems.join("; ")}\n`);
    err(`Run with --help for the parameters of ${def.name}.\n`);
    return EXIT.usage;
  }
  const result = await _run(def, parsed.values, options, err);
  if (parsed.json) {
    out(JSON.stringify(result, null, 2) + "\n");
  } else if (result.success) {
    out(renderResult(result));
  } else {
    err(`${result.error}\n`);
    const { success: _s, error: _e, ...rest } = result;
    const text = renderResult(rest);
    if (text) err(text);
  }
  return result.success ? EXIT.ok : EXIT.failed;
}

/** The tool `argv` names where the target holds several (then argv's first word), or an exit code. */
function _pick(
  tools: ToolDefinition[],
  argv: string[],
  out: Sink,
  err: Sink,
): { def: ToolDefinition; args: string[] } | number {
  if (tools.length === 1) return { def: tools[0], args: argv };
  const name = argv[0];
  const found = tools.find((t) => t.name === name);
  if (found) return { def: found, args: argv.slice(1) };
  const list = tools.map((t) => `  ${t.name}  ${_firstLine(t.description)}`).join("\n");
  const text = `Usage: <tool> [options]   (tools: ${tools.map((t) => t.name).join(", ")})\n` +
    `${list}\n`;
  if (argv.includes("--help") || argv.length === 0) {
    out(text);
    return argv.length === 0 ? EXIT.usage : EXIT.ok;
  }
  err(`Error: unknown tool ${JSON.stringify(name)}\n${text}`);
  return EXIT.usage;
}

/** Run `def` outside any sandbox, its progress on `err`. */
async function _run(
  def: ToolDefinition,
  values: Record<string, unknown>,
  options: HarnessOptions,
  err: Sink,
) {
  const workspace = options.workspace ?? Deno.cwd();
  const reporter = new Reporter({ sink: err });
  let lineOpen = false;
  const result = await invokeTool(def, values, {
    signal: new AbortController().signal,
    workspace,
    // The harness is a developer tool run with `deno run -A`: the grant is
    // the workspace for files, and every command and host ("*").
    grant: { read: [workspace], write: [workspace], run: ["*"], net: ["*"], ...options.grant },
    report: (kind, message, opts) => {
      lineOpen = !(opts?.end ?? "\n").includes("\n");
      reporter.report(def.name, def.permissions, { kind, message, options: opts });
    },
  });
  if (lineOpen) err("\n");
  return result;
}

function _namespace(target: unknown): Record<string, unknown> {
  if (typeof target === "function") return { [target.name || "Tool"]: target };
  if (Array.isArray(target)) return { TOOL_CONFIGS: target };
  const t = target as Record<string, unknown> | null;
  if (t && typeof t === "object" && typeof t.function === "function" && "name" in t) {
    return { TOOL_CONFIG: t };
  }
  if (t && typeof t === "object") return t;
  throw new TypeError(
    "runHarness needs a @tool class, a tool config (or a list of them) or a module namespace",
  );
}

/** A module namespace (not one class, one config or a list of configs). */
function _isModule(target: unknown): boolean {
  return typeof target === "object" && target !== null && !Array.isArray(target) &&
    typeof (target as { function?: unknown }).function !== "function";
}

function _firstLine(text: string): string {
  return text.split("\n")[0];
}

/**
 * The `--help` text of a tool, generated from its schema.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { collectTools } from "./tool.ts";
 * import { usage } from "./harness.ts";
 * const { tools: [t] } = await collectTools({ TOOL_CONFIG: { name: "T", description: "Test",
 *   input_schema: z.object({ path: z.string().describe("Where") }), function: () => "" } });
 * assert.ok(usage(t).includes("Where"));
 * ```
 */
export function usage(def: ToolDefinition): string {
  const params = describeParams(def).filter((p) => !RESERVED_FLAGS.has(p.key));
  const first = positionalParam(params);
  const letters = def.permissions === ""
    ? "none"
    : [...def.permissions].map((l) => `${l} (${LETTER_NAMES[l as Letter]})`).join(", ");
  const rows: Array<[string, string]> = params.map((p) => {
    const notes: string[] = [];
    let left: string;
    if (p.kind === "boolean") left = `--${p.key}, --no-${p.key}`;
    else if (p.kind === "array") {
      left = `--${p.key} <${p.item}> ...`;
      notes.push("repeat the flag for each item, or give one JSON array");
    } else left = `--${p.key} <${p.kind === "json" ? "json" : p.kind}>`;
    if (p === first) left = `<${p.key}>, ${left}`;
    if (p.choices) notes.push(`one of: ${p.choices.join(", ")}`);
    if (p.required) notes.push("required");
    else if (p.defaultValue !== undefined) notes.push(`default: ${JSON.stringify(p.defaultValue)}`);
    const text = [p.description ?? "", notes.length ? `(${notes.join("; ")})` : ""]
      .filter(Boolean).join(" ");
    return [left, text];
  });
  rows.push(["-j, --json", "Print the result as JSON on stdout"]);
  rows.push(["--help", "Show this help"]);
  const width = Math.min(40, Math.max(...rows.map(([l]) => l.length)));
  const lines = rows.map(([l, r]) =>
    l.length > width ? `  ${l}\n  ${" ".repeat(width)}  ${r}` : `  ${l.padEnd(width)}  ${r}`
  );
  return [
    `Usage: ${def.name}${
      first ? ` ${first.required ? `<${first.key}>` : `[${first.key}]`}` : ""
    } [options]`,
    "",
    def.description,
    "",
    `Permissions: ${letters}${def.confirm ? "; asks for confirmation" : ""}`,
    "",
    "Options:",
    ...lines,
    "",
  ].join("\n");
}

/**
 * A readable rendering of a result: one `key: value` line each, multi-line
 * text as an indented block, lists one item a line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderResult } from "./harness.ts";
 * assert.ok(renderResult({ success: true, lines: 3 }) === "success: true\nlines: 3\n");
 * ```
 */
export function renderResult(result: Record<string, unknown>): string {
  let text = "";
  for (const [key, value] of Object.entries(result)) {
    if (typeof value === "string" && value.includes("\n")) {
      text += `${key}:\n${_indent(value.replace(/\n$/, ""))}\n`;
    } else if (Array.isArray(value)) {
      text += `${key}: (${value.length})\n`;
      for (const item of value) text += `  ${_inline(item)}\n`;
    } else {
      text += `${key}: ${_inline(value)}\n`;
    }
  }
  return text;
}

function _inline(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return Object.entries(value).map(([k, v]) =>
      `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`
    )
      .join("  ");
  }
  return JSON.stringify(value);
}

function _indent(text: string): string {
  return text.split("\n").map((l) => `  ${l}`).join("\n");
}
