/**
 * Shared code of the interpreter tools (RunBashCode, RunPythonCode): the
 * presence check behind `shouldLoad()` and the run itself.
 *
 * @module
 */
import { z } from "zod";
import { failure, type ToolCallContext } from "../../core/tool/mod.ts";
import { resolveInside, runSubprocess } from "../../core/guard/mod.ts";

/** Bytes kept of stdout and of stderr each. */
export const MAX_STREAM_BYTES = 100_000;
/** Longest accepted code, in bytes (it is passed as one argument; Linux caps those at 128 KiB). */
export const MAX_CODE_BYTES = 120_000;

/** The input schema shared by the interpreter tools. */
export function interpreterInput(language: string): z.ZodObject<{
  code: z.ZodString;
  timeout: z.ZodDefault<z.ZodNumber>;
  working_directory: z.ZodOptional<z.ZodString>;
}> {
  return z.object({
    code: z.string().min(1).describe(`${language} code to run, in the workspace folder`),
    timeout: z.number().int().min(1).max(3600).default(60).describe(
      "Kill it after this many seconds (1 to 3600)",
    ),
    working_directory: z.string().min(1).optional().describe(
      "Folder to run in, inside the workspace (default: the workspace itself)",
    ),
  });
}

/**
 * Whether `command --version` runs. Never throws. `undefined` means it is
 * there; otherwise the reason to skip. When this sandbox may not start
 * processes at all, the check cannot tell, so the tool is kept (a call then
 * fails with a clear permission error).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingReason } from "./_interpreter.ts";
 * assert.ok(await missingReason("no-such-interpreter-xyz") === "no-such-interpreter-xyz not found on PATH");
 * ```
 */
export async function missingReason(command: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(command, {
      args: ["--version"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success ? undefined : `${command} --version failed (exit code ${out.code})`;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return `${command} not found on PATH`;
    if (err instanceof Error && err.name === "NotCapable") return undefined;
    return `cannot run ${command}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * Run `command ...args <code>` in the workspace and shape the tool result.
 * The environment (allowlisted variables only) and the jail come from the
 * sandbox (see `configureSubprocesses` in core/guard/subprocess.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runInterpreter } from "./_interpreter.ts";
 * import { testContext } from "../../core/tool/mod.ts";
 * const r = await runInterpreter("RunBashCode", "bash", ["-c"], { code: "echo hi", timeout: 5 }, testContext());
 * assert.ok(r.stdout === "hi\n");
 * ```
 */
export async function runInterpreter(
  tool: string,
  command: string,
  args: string[],
  input: { code: string; timeout: number; working_directory?: string },
  context: ToolCallContext,
): Promise<Record<string, unknown>> {
  const { code, timeout, working_directory } = input;
  // A folder inside what the tool may read (the workspace, by the shipped policy).
  const cwd = working_directory === undefined
    ? context.workspace
    : await resolveInside(working_directory, context.grant.read, context.workspace, {
      what: "folder",
    });
  if (working_directory !== undefined && !(await Deno.stat(cwd)).isDirectory) {
    throw new Error(`working_directory "${working_directory}" is not a folder`);
  }
  const size = new TextEncoder().encode(code).length;
  if (size > MAX_CODE_BYTES) {
    throw new RangeError(`code is too long (${size} bytes, limit ${MAX_CODE_BYTES})`);
  }
  const r = await runSubprocess({
    command,
    args: [...args, code],
    cwd,
    timeoutMs: timeout * 1000,
    maxOutputBytes: MAX_STREAM_BYTES,
    signal: context.signal,
  });
  const result: Record<string, unknown> = {
    success: r.exitCode === 0 && !r.timedOut && !r.aborted,
    exit_code: r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr,
    timed_out: r.timedOut,
    truncated: r.truncated,
    code,
    timeout,
    ...(working_directory !== undefined ? { working_directory } : {}),
  };
  if (r.timedOut) {
    result.error = failure(tool, `timed out after ${timeout} s`).error;
  } else if (r.aborted) {
    result.error = failure(tool, "cancelled").error;
  } else if (r.exitCode !== 0) {
    result.error = failure(tool, `the code exited with status ${r.exitCode}`).error;
  }
  return result;
}
