/**
 * One OpenTelemetry span per tool call (`execute_tool NAME`), with the
 * tool, toolset, identity, session, outcome and whether its sandbox was
 * started or reused; the same call is counted in {@link telemetry}. Deno
 * exports the span over OTLP when `OTEL_DENO=true` and the standard
 * `OTEL_EXPORTER_OTLP_*` variables say where; otherwise the API is a no-op.
 *
 * @module
 */
import { type Context, context, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import { type CallOutcome, type CorralMetrics, telemetry } from "./metrics.ts";
import { useTrace } from "../base/mod.ts";

// The sandbox marks (../base/sandbox_mark.ts) go on these spans.
useTrace(trace);

/** What is known of a call when it starts. */
export interface CallInfo {
  /** The tool's name. */
  tool: string;
  /** Its toolset. */
  toolset: string;
  /** Who called. */
  identity: string;
  /** The MCP session, when there is one. */
  session?: string;
  /** The caller's W3C `traceparent` (MCP `_meta.traceparent`): the span is its child. */
  traceparent?: string;
}

/** What the call reports about itself while it runs. */
export interface CallMarks {
  /** Whether its sandbox was started for it or reused. */
  sandbox(how: "start" | "reuse"): void;
}

const _tracer = trace.getTracer("corral");

/**
 * Run `fn` as one traced and counted call. `outcomeOf` maps its result to
 * an outcome; a throw is `error` (and is rethrown).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CorralMetrics } from "./metrics.ts";
 * import { traceCall } from "./spans.ts";
 * const m = new CorralMetrics();
 * const r = await traceCall({ tool: "ReadFile", toolset: "files", identity: "alice" }, async () => ({ success: true }), (x) => x.success ? "success" : "failure", m);
 * assert.ok(r.success);
 * assert.match(await m.render(), /corral_calls_total\{tool="ReadFile",toolset="files",identity="alice",outcome="success"\} 1/);
 * ```
 */
export async function traceCall<T>(
  info: CallInfo,
  fn: (marks: CallMarks) => Promise<T>,
  outcomeOf: (result: T) => CallOutcome,
  metrics: CorralMetrics = telemetry,
): Promise<T> {
  const t0 = performance.now();
  const parent = _parent(info.traceparent);
  return await _tracer.startActiveSpan(`execute_tool ${info.tool}`, {}, parent, async (span) => {
    span.setAttributes({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": info.tool,
      "corral.toolset": info.toolset,
      "corral.identity": info.identity,
      ...(info.session ? { "corral.session": info.session } : {}),
    });
    const marks: CallMarks = { sandbox: (how) => span.setAttribute("corral.sandbox", how) };
    let outcome: CallOutcome = "error";
    try {
      const result = await fn(marks);
      outcome = outcomeOf(result);
      return result;
    } catch (err) {
      span.recordException(err as Error);
      throw err;
    } finally {
      span.setAttribute("corral.outcome", outcome);
      if (outcome === "error") span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      metrics.recordCall({ ...info, outcome, durationMs: performance.now() - t0 });
    }
  });
}

/** The context of a valid W3C `traceparent` (version 00), else the active one. */
function _parent(traceparent: string | undefined): Context {
  const m = typeof traceparent === "string"
    ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent)
    : null;
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return context.active();
  return trace.setSpanContext(context.active(), {
    traceId: m[1],
    spanId: m[2],
    traceFlags: parseInt(m[3], 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}
