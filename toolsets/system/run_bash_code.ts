import type { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { interpreterInput, missingReason, runInterpreter } from "./_interpreter.ts";

const input = interpreterInput("Bash");

/**
 * Run Bash code (`bash -c`) in the workspace folder, with a time limit.
 * The process gets a clean environment (PATH, LANG, TERM, a scratch HOME
 * and the variables the policy lists); stdout and stderr are kept up to
 * 100 000 bytes each. Skipped when `bash` is not on PATH.
 *
 * Permissions: `rwx`. The process runs in the sandbox namespace, whose
 * mounts are the grant: it reads and writes exactly what `r` and `w` allow.
 *
 * @example
 * ```sh
 * deno run -A toolsets/system/run_bash_code.ts "ls | wc -l" --timeout 10
 * ```
 */
@tool({
  permissions: "rwx",
  commands: ["bash"],
  description: "Run Bash code in the workspace folder and return its exit code, stdout and " +
    "stderr. Killed after `timeout` seconds.",
  input,
})
export class RunBashCode extends BaseTool {
  /** Skip the tool when bash is not installed. */
  static override async shouldLoad(): Promise<boolean> {
    const reason = await missingReason("bash");
    this.skipReason = reason;
    return reason === undefined;
  }

  /** Run the code. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    this.reportStart(`Running bash code (${args.code.split("\n").length} lines)`, { end: "" });
    const result = await runInterpreter("RunBashCode", "bash", ["-c"], args, this.context!);
    this.reportResult(` exit code ${result.exit_code}`);
    return result;
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(RunBashCode);
