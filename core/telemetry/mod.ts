/**
 * What operators see: metrics for Prometheus and OpenTelemetry, a span per call,
 * and the `/metrics` answer behind its own token.
 *
 * @module
 */
export { type CorralMetrics, telemetry } from "./metrics.ts";
export { metricsResponse } from "./metrics_endpoint.ts";
export { traceCall } from "./spans.ts";
