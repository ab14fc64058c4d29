/**
 * Marking the traced call running now with how it got its sandbox: loads
 * only the OpenTelemetry API (a no-op unless Deno exports spans), never the
 * metrics.
 *
 * @module
 */
import { trace } from "@opentelemetry/api";

/**
 * Mark the call running now (the active span, if any) as having started its
 * sandbox or reused one; a no-op without OpenTelemetry or outside a call.
 *
 * @example
 * ```ts
 * import { markSandbox } from "./sandbox_mark.ts";
 * markSandbox("start"); // outside a span: nothing happens, nothing throws
 * ```
 */
export function markSandbox(how: "start" | "reuse"): void {
  trace.getActiveSpan()?.setAttribute("corral.sandbox", how);
}
