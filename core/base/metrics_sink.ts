/**
 * Where the registry reports what operators may count (sandboxes started
 * and ended, egress verdicts), without loading the metrics themselves:
 * `prom-client` costs about 35 ms of start-up, which `corral call` and a
 * stdio `corral mcp` never need. The process's metrics
 * (../telemetry/metrics.ts `telemetry`) take over when they are first loaded (by the
 * HTTP server, or under `OTEL_DENO=true`), and get the live sandbox count
 * as it stands then.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installMetrics, sink } from "./metrics_sink.ts";
 * sink.sandboxes(1);
 * const seen: number[] = [];
 * installMetrics({ sandboxes: (d) => void seen.push(d), egress: () => {} });
 * sink.sandboxes(-1);
 * assert.deepEqual(seen, [1, -1]); // the live one counted at install, then its end
 * ```
 *
 * @module
 */

/** What the metrics take from the registry. */
export interface MetricsTarget {
  /** A sandbox started (+1) or ended (-1). */
  sandboxes(delta: 1 | -1): void;
  /** One outgoing connection with the egress guard's verdict. */
  egress(verdict: "allowed" | "refused"): void;
}

let _target: MetricsTarget | undefined;
let _live = 0;

/** Where the registry reports: forwarded to the metrics once they are loaded. */
export const sink: MetricsTarget = {
  sandboxes(delta) {
    _live += delta;
    _target?.sandboxes(delta);
  },
  egress(verdict) {
    _target?.egress(verdict);
  },
};

/** A sandbox running now (core/sandbox/'s `Sandbox`), whose memory the metrics read. */
export interface LiveSandbox {
  /** Its process (the top of its tree); undefined for a worker or before it started. */
  readonly pid: number | undefined;
  /** Its label: its toolset and letters, e.g. `files[rw]`. */
  readonly options: { readonly label: string };
}

/** The call sandboxes running now: the registry's pool adds and removes them, the metrics read them. */
export const runningSandboxes: Set<LiveSandbox> = new Set();

/** Make `target` the process's metrics (the sandboxes live now counted at once). */
export function installMetrics(target: MetricsTarget): void {
  if (_target === target) return;
  _target = target;
  for (let i = 0; i < _live; i++) target.sandboxes(1);
}
