/**
 * Marking the traced call running now with how it got its sandbox. Only
 * corral's call spans (../telemetry/spans.ts) are marked: that module hands over the
 * OpenTelemetry API when it loads, so a host that traces nothing (the CLI)
 * never loads the API for this.
 *
 * @module
 */
import type { trace as Trace } from "@opentelemetry/api";

let _trace: typeof Trace | undefined;

/** The OpenTelemetry API of the call spans (../telemetry/spans.ts calls it as it loads). */
export function useTrace(trace: typeof Trace): void {
  _trace = trace;
}

/**
 * Mark the call running now (the active span, if any) as having started its
 * sandbox or reused one; a no-op without call spans or outside a call.
 *
 * @example
 * ```ts
 * import { markSandbox } from "./sandbox_mark.ts";
 * markSandbox("start"); // outside a span: nothing happens, nothing throws
 * ```
 */
export function markSandbox(how: "start" | "reuse"): void {
  _trace?.getActiveSpan()?.setAttribute("corral.sandbox", how);
}
