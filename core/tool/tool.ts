/**
 * The tool contract: class tools (`@tool` + `BaseTool`) and module tools
 * (`TOOL_CONFIGS` / `TOOL_CONFIG`), normalised into one {@link ToolDefinition}.
 *
 * @module
 */
import {
  isJsonSchema,
  jsonSchemaInput,
  jsonSchemasReady,
  rawJsonSchema,
} from "./_json_schema_input.ts";
import { z } from "zod";
import { parsePermissions } from "./permissions.ts";
import { type TaskConfigFields, type TaskFields, taskOptions } from "./_task_support.ts";

/** Tool names allowed by corral (and by every function-calling API). */
export const TOOL_NAME_PATTERN: RegExp = /^[A-Za-z0-9_.-]{1,64}$/;

/** Kinds of progress report, as in `reportStart` … `reportInfo`. */
export type ReportKind = "start" | "progress" | "result" | "error" | "warning" | "info";

/** Options of a progress report. */
export interface ReportOptions {
  /** Text written after the message; `""` keeps the line open (default `"\n"`). */
  end?: string;
  /** Progress so far (for MCP progress notifications). */
  progress?: number;
  /** Total amount of work, when known. */
  total?: number;
}

/** What a running tool receives from its host. */
export interface ToolCallContext {
  /** Aborted when the call is cancelled or times out. */
  signal: AbortSignal;
  /** Send a progress report to the host (stderr, MCP notifications). */
  report(kind: ReportKind, message: string, options?: ReportOptions): void;
  /** Absolute path of the workspace (the current directory of the host). */
  workspace: string;
  /** The effective grant of this call: paths, commands and hosts. */
  grant: Grant;
  /** The largest file the tool should read (policy `max_read_bytes`); absent: no limit. */
  maxReadBytes?: number;
  /**
   * Ask the MCP client that made this call for an LLM completion
   * (`sampling/createMessage` params: `messages`, `maxTokens`, …). Rejects
   * with a clear error where no client can answer (the CLI, stateless HTTP).
   */
  sample?(params: Record<string, unknown>, options?: AskOptions): Promise<Record<string, unknown>>;
  /** Ask the person at the client (`elicitation/create`: `message`, `requestedSchema`). */
  elicit?(params: Record<string, unknown>, options?: AskOptions): Promise<Record<string, unknown>>;
  /** Ask the client for its roots (`roots/list`); resolves to `{ roots }`. */
  roots?(options?: AskOptions): Promise<Record<string, unknown>>;
}

/** A question's options: `key` names it (its key in a 2026-07-28 round's `inputRequests`). */
export interface AskOptions {
  key?: string;
}

/** Paths, commands and hosts a sandbox holds; empty lists mean nothing. */
export interface Grant {
  read: string[];
  write: string[];
  run: string[];
  net: string[];
  /** Extra environment variable names subprocesses may inherit. */
  env?: string[];
  /**
   * Paths that other programs run or obey (`.git/hooks/`, `.envrc`, …), kept
   * read-only inside the write grant (core/guard/planted.ts); absent: the defaults.
   */
  planted?: string[];
}

/** Options of the `@tool` decorator. */
export interface ToolOptions extends TaskFields {
  /** What the tool does, for the model. Required, non-empty. */
  description: string;
  /** Permission letters the tool needs, e.g. `"r"` or `"rw"`. Default none. */
  permissions?: string;
  /** The zod object schema of its arguments. Default: no arguments. */
  input?: z.ZodTypeAny;
  /** Calls need a person's confirmation. */
  confirm?: boolean;
  /** Calls need confirmation when this boolean argument is `true` (e.g. `"overwrite"`). */
  confirmWhen?: string;
  /**
   * For `x` tools: the commands the tool runs (e.g. `["bash"]`). Its grant
   * then holds only those of the policy's `run` list, not the whole list.
   */
  commands?: string[];
  /** Name override; by default the class name. */
  name?: string;
}

const _classMeta = new WeakMap<object, ToolOptions & { name: string }>();

/**
 * Mark a `BaseTool` subclass as a tool (a standard TC39 class decorator).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { BaseTool, tool } from "./tool.ts";
 *
 * @tool({ permissions: "", description: "Say hello", input: z.object({ who: z.string() }) })
 * class Hello extends BaseTool {
 *   run(args: { who: string }) {
 *     return { success: true, greeting: `hello ${args.who}` };
 *   }
 * }
 * assert.ok(Hello.name === "Hello");
 * ```
 */
export function tool(
  options: ToolOptions,
): <C extends abstract new (...args: never[]) => BaseTool>(
  cls: C,
  ctx: ClassDecoratorContext<C>,
) => void {
  return (cls, ctx) => {
    _classMeta.set(cls, { ...options, name: options.name ?? String(ctx.name ?? cls.name) });
  };
}

/**
 * Base class of class tools. Subclasses implement `run(args)` and may
 * override the static `shouldLoad()`; progress goes through `report*`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BaseTool, tool } from "./tool.ts";
 * @tool({ description: "Always skipped" })
 * class Never extends BaseTool {
 *   static override shouldLoad() {
 *     this.skipReason = "not on this machine";
 *     return false;
 *   }
 *   run() { return { success: true }; }
 * }
 * assert.ok(Never.shouldLoad() === false);
 * ```
 */
export abstract class BaseTool {
  /** Why `shouldLoad()` returned false; shown by `corral list`. */
  static skipReason: string | undefined = undefined;

  /** Return false (after setting `skipReason`) to skip this tool. Must not throw. */
  static shouldLoad(): boolean | Promise<boolean> {
    return true;
  }

  /** The context of the current call, set by the host before `run`. */
  context: ToolCallContext | undefined = undefined;

  /** Do the work. Return `{ success, ... }` (a string or object is accepted). */
  abstract run(args: never): unknown;

  /** Cancelled or timed-out calls abort this signal. */
  get signal(): AbortSignal {
    return this.context?.signal ?? new AbortController().signal;
  }

  /** Report the start of a step (coloured by the tool's letters). */
  reportStart(message: string, options?: ReportOptions): void {
    this.context?.report("start", message, options);
  }
  /** Report progress; give `progress`/`total` for MCP progress notifications. */
  reportProgress(message: string, options?: ReportOptions): void {
    this.context?.report("progress", message, options);
  }
  /** Report the result of a step. */
  reportResult(message: string, options?: ReportOptions): void {
    this.context?.report("result", message, options);
  }
  /** Report an error (the call's result still says what failed). */
  reportError(message: string, options?: ReportOptions): void {
    this.context?.report("error", message, options);
  }
  /** Report a warning. */
  reportWarning(message: string, options?: ReportOptions): void {
    this.context?.report("warning", message, options);
  }
  /** Report a piece of information. */
  reportInfo(message: string, options?: ReportOptions): void {
    this.context?.report("info", message, options);
  }
}

/** A module tool, as listed in `TOOL_CONFIGS` / `TOOL_CONFIG`. */
export interface ToolConfig extends TaskConfigFields {
  /** Tool name, matching {@link TOOL_NAME_PATTERN}. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** zod object schema of the arguments, or a JSON Schema object given as is. */
  input_schema?: z.ZodTypeAny | Record<string, unknown>;
  /** The implementation; sync or async, returns a string or an object. */
  // deno-lint-ignore no-explicit-any
  function: (args: any, context: ToolCallContext) => unknown;
  /** Calls need a person's confirmation. */
  requires_confirmation?: boolean;
  /** Calls need confirmation when this argument is truthy (e.g. `"overwrite"`). */
  confirm_when?: string;
  /** For `x` tools: the commands it runs; its grant holds only these. */
  commands?: string[];
  /** Permission letters, default none. */
  permissions?: string;
}

/** Whether a tool loads, and why not. */
export type LoadDecision = { load: true } | { load: false; reason: string };

/** A tool in the one shape the sandbox runs, whatever its authoring style. */
export interface ToolDefinition extends TaskFields {
  name: string;
  description: string;
  permissions: string;
  confirm: boolean;
  /** Calls need confirmation when this argument is truthy. */
  confirmWhen?: string;
  /** Commands an `x` tool runs, when it says so. */
  commands?: string[];
  style: "class" | "module";
  input: z.ZodTypeAny;
  shouldLoad(): Promise<LoadDecision>;
  invoke(args: unknown, context: ToolCallContext): Promise<unknown>;
}

/** True when `value` looks like a zod object schema (from any zod 3 copy). */
export function isZodObject(value: unknown): value is z.ZodObject<z.ZodRawShape> {
  const v = value as { safeParse?: unknown; _def?: { typeName?: unknown } } | null;
  return typeof v?.safeParse === "function" && v?._def?.typeName === "ZodObject";
}

function _message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Error text showing a valid export, used when a module has none. */
export const VALID_EXPORT_EXAMPLE =
  'export const TOOL_CONFIGS = [{ name: "Echo", description: "Echo text", ' +
  "input_schema: z.object({ text: z.string() }), function: ({ text }) => text }]";

/** Result of collecting the tools of one module. */
export interface CollectedTools {
  tools: ToolDefinition[];
  /** One message per export that breaks the contract. */
  problems: string[];
}

// deno-lint-ignore no-explicit-any
type AnyClass = (new () => BaseTool) & { shouldLoad?: () => any; skipReason?: string };

/**
 * Collect every tool a module namespace exports: `@tool` classes,
 * `TOOL_CONFIGS` (array), `TOOL_CONFIG` (object or array), and a default
 * plugin object (or plugin class, instantiated) whose `tools()` returns
 * tool configs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { collectTools } from "./tool.ts";
 * const ns = { TOOL_CONFIGS: [{ name: "Echo", description: "Echo", input_schema: z.object({ t: z.string() }), function: (a: { t: string }) => a.t }] };
 * const { tools } = await collectTools(ns);
 * assert.ok(tools[0].name === "Echo");
 * ```
 */
export async function collectTools(ns: Record<string, unknown>): Promise<CollectedTools> {
  const tools: ToolDefinition[] = [];
  const problems: string[] = [];
  const configs: Array<{ where: string; value: unknown }> = [];

  for (const [key, value] of Object.entries(ns)) {
    if (typeof value === "function" && _classMeta.has(value)) {
      try {
        tools.push(_fromClass(value as unknown as AnyClass));
      } catch (err) {
        problems.push(`export ${key}: ${_message(err)}`);
      }
    }
  }
  if ("TOOL_CONFIGS" in ns) {
    if (!Array.isArray(ns.TOOL_CONFIGS)) {
      problems.push(`TOOL_CONFIGS must be an array of tool configs, like: ${VALID_EXPORT_EXAMPLE}`);
    } else {
      ns.TOOL_CONFIGS.forEach((v, i) => configs.push({ where: `TOOL_CONFIGS[${i}]`, value: v }));
    }
  }
  if ("TOOL_CONFIG" in ns) {
    const v = ns.TOOL_CONFIG;
    if (Array.isArray(v)) {
      v.forEach((c, i) => configs.push({ where: `TOOL_CONFIG[${i}]`, value: c }));
    } else configs.push({ where: "TOOL_CONFIG", value: v });
  }
  let def = ns.default as { tools?: unknown } | undefined;
  // A plugin class as Cogtrix writes it (`export default class P { tools() {…} }`):
  // instantiate it, as entry points do.
  if (
    typeof def === "function" && !_classMeta.has(def) &&
    typeof (def as { prototype?: { tools?: unknown } }).prototype?.tools === "function"
  ) {
    try {
      def = new (def as new () => { tools?: unknown })();
    } catch (err) {
      problems.push(
        `default export: new ${(def as { name?: string }).name}() threw: ${_message(err)}`,
      );
      def = undefined;
    }
  }
  if (def && typeof def === "object" && typeof def.tools === "function") {
    try {
      const list = await (def.tools as () => unknown)();
      if (!Array.isArray(list)) {
        problems.push("default.tools() must return an array of tool configs");
      } else list.forEach((c, i) => configs.push({ where: `default.tools()[${i}]`, value: c }));
    } catch (err) {
      problems.push(`default.tools() threw: ${_message(err)}`);
    }
  }
  // A JSON Schema input is checked by Ajv, loaded only when a tool has one.
  await jsonSchemasReady(configs.map((c) => (c.value as { input_schema?: unknown })?.input_schema));
  for (const { where, value } of configs) {
    try {
      tools.push(_fromConfig(value));
    } catch (err) {
      problems.push(`${where}: ${_message(err)}`);
    }
  }
  return { tools, problems };
}

/**
 * Check everything a tool declares and throw one `TypeError` listing every
 * breach (so `corral check` shows them all at once). Returns the letters.
 */
function _checkCommon(
  name: unknown,
  description: unknown,
  input: unknown,
  permissions: unknown,
  fn?: { value: unknown },
): string {
  const problems: string[] = [];
  const label = typeof name === "string" && name ? name : JSON.stringify(name);
  if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
    problems.push(
      `tool name ${
        JSON.stringify(name)
      } does not match ${TOOL_NAME_PATTERN} (letters, digits, _ . -, at most 64)`,
    );
  }
  if (typeof description !== "string" || description.trim() === "") {
    problems.push(`Tool "${label}": description is missing or empty`);
  }
  if (!isZodObject(input) && !rawJsonSchema(input as z.ZodTypeAny)) {
    problems.push(
      `Tool "${label}": input schema must be a zod object, like z.object({ path: z.string() })`,
    );
  }
  if (fn && typeof fn.value !== "function") {
    problems.push(`Tool "${label}": "function" must be a function`);
  }
  let letters = "";
  try {
    letters = parsePermissions(permissions, String(label));
  } catch (err) {
    problems.push(_message(err));
  }
  if (problems.length) throw new TypeError(problems.join("; "));
  return letters;
}

function _fromClass(cls: AnyClass): ToolDefinition {
  const meta = _classMeta.get(cls)!;
  const input = meta.input ?? _emptyObject();
  const permissions = _checkCommon(meta.name, meta.description, input, meta.permissions);
  return {
    name: meta.name,
    description: meta.description,
    permissions,
    confirm: meta.confirm === true,
    ...(typeof meta.confirmWhen === "string" ? { confirmWhen: meta.confirmWhen } : {}),
    ...(meta.commands ? { commands: _commands(meta.commands, meta.name) } : {}),
    ...taskOptions(meta.name, meta.taskSupport, meta.taskAfterInput),
    style: "class",
    input,
    async shouldLoad() {
      try {
        const ok = await cls.shouldLoad?.();
        if (ok === false) {
          return { load: false, reason: cls.skipReason || "shouldLoad() returned false" };
        }
        return { load: true };
      } catch (err) {
        return { load: false, reason: `shouldLoad() threw: ${_message(err)}` };
      }
    },
    async invoke(args, context) {
      const inst = new cls();
      inst.context = context;
      return await (inst.run as (a: unknown) => unknown)(args);
    },
  };
}

function _fromConfig(value: unknown): ToolDefinition {
  if (!value || typeof value !== "object") {
    throw new TypeError(`a tool config must be an object, like: ${VALID_EXPORT_EXAMPLE}`);
  }
  const c = value as Partial<ToolConfig>;
  // A JSON Schema given as is (instead of zod) is kept as written for tools/list.
  const input = isJsonSchema(c.input_schema)
    ? jsonSchemaInput(c.input_schema)
    : c.input_schema ?? _emptyObject();
  const permissions = _checkCommon(c.name, c.description, input, c.permissions, {
    value: c.function,
  });
  const fn = c.function!;
  return {
    name: c.name!,
    description: c.description!,
    permissions,
    confirm: c.requires_confirmation === true,
    ...(typeof c.confirm_when === "string" ? { confirmWhen: c.confirm_when } : {}),
    ...(c.commands ? { commands: _commands(c.commands, c.name!) } : {}),
    ...taskOptions(c.name, c.task_support, c.task_after_input),
    style: "module",
    input,
    shouldLoad: () => Promise.resolve({ load: true }),
    async invoke(args, context) {
      return await fn(args, context);
    },
  };
}

function _emptyObject(): z.ZodTypeAny {
  return z.object({}).strict();
}

function _commands(value: unknown, tool: string): string[] {
  if (!Array.isArray(value) || !value.every((c) => typeof c === "string" && c !== "")) {
    throw new TypeError(`Tool "${tool}": commands must be a list of command names, like ["bash"]`);
  }
  return [...value];
}
