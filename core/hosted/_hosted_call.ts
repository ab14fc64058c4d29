/**
 * One call of a hosted server's tool as a corral result: the server's
 * answer (./_hosted_tools.ts), or corral's own error when the call was
 * cancelled (that call alone fails; the server keeps running), timed out
 * (the server was stopped) or the server failed.
 *
 * @module
 */
import { failure, type ToolResult, withFault } from "../tool/mod.ts";
import type { HostedCall, HostedServer } from "./hosted_server.ts";
import { hostedRuntime } from "./hosted_runtime.ts";
import { hostedResult } from "./_hosted_tools.ts";

/**
 * Call `serverTool` of `server` (named `name`) as corral's tool `tool`.
 * Never throws.
 */
export async function runHostedCall(
  server: HostedServer,
  name: string,
  tool: string,
  serverTool: string,
  args: unknown,
  ctx: HostedCall & { policy: { max_output_bytes: number } },
): Promise<ToolResult> {
  try {
    const raw = await server.call(serverTool, args, ctx);
    return hostedResult(tool, raw, ctx.policy.max_output_bytes);
  } catch (err) {
    // Loaded with the server it failed on (./hosted_runtime.ts): at hand, never a start's cost.
    const { CallCancelled, CallTimedOut } = await hostedRuntime();
    // As corral's own tools report it (core/sandbox/sandbox.ts); the server keeps running.
    if (err instanceof CallCancelled) {
      return withFault(failure(tool, "cancelled"), "error", "cancelled");
    }
    // The lane's own timeout only: a server's error that speaks of a timeout is the server's.
    const timedOut = err instanceof CallTimedOut;
    return withFault(
      failure(
        tool,
        timedOut
          ? `timed out after ${ctx.timeoutMs} ms; server "${name}" was stopped and ` +
            `starts again on the next call`
          : `server "${name}": ${(err as Error).message}`,
        timedOut ? { timed_out: true } : undefined,
      ),
      "error",
      timedOut ? "timeout" : "server",
    );
  }
}
