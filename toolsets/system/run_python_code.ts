import type { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { interpreterInput, missingReason, runInterpreter } from "./_interpreter.ts";

const input = interpreterInput("Python 3");

/**
 * Run Python 3 code (`python3 -c`) in the workspace folder, with a time limit.
 * The process gets a clean environment (PATH, LANG, TERM, a scratch HOME
 * and the variables the policy lists); stdout and stderr are kept up to
 * 100 000 bytes each. Skipped when `python3` is not on PATH.
 *
 * Permissions: `rwx`. The process runs in the sandbox namespace, whose
 * mounts are the grant: it reads and writes exactly what `r` and `w` allow.
 *
 * @example
 * ```sh
 * deno run -A toolsets/system/run_python_code.ts "print(6 * 7)" --timeout 10
 * ```
 */
@tool({
  permissions: "rwx",
  commands: ["python3"],
  description: "Run Python 3 code in the workspace folder and return its exit code, stdout and " +
    "stderr. Killed after `timeout` seconds.",
  input,
})
export class RunPythonCode extends BaseTool {
  /** Skip the tool when python3 is not installed. */
  static override async shouldLoad(): Promise<boolean> {
    const reason = await missingReason("python3");
    this.skipReason = reason;
    return reason === undefined;
  }

  /** Run the code. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    this.reportStart(`Running Python code (${args.code.split("\n").length} lines)`, { end: "" });
    const result = await runInterpreter("RunPythonCode", "python3", ["-c"], args, this.context!);
    this.reportResult(` exit code ${result.exit_code}`);
    return result;
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(RunPythonCode);
