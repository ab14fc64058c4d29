/**
 * corral's metrics, kept twice from one call site: in a Prometheus registry
 * (`prom-client`, rendered at `/metrics`) and as OpenTelemetry instruments
 * (`@opentelemetry/api`; Deno exports them over OTLP when `OTEL_DENO=true`,
 * and they cost nothing otherwise). Calls by outcome, call duration, live
 * sandboxes, queue depth, egress connections by verdict.
 *
 * @module
 */
import { type Attributes, metrics as otelMetrics } from "@opentelemetry/api";
import client from "prom-client";
import { installMetrics, processTreeMemory, runningSandboxes } from "../base/mod.ts";

/** How a call ended: the tool said so (`failure`), corral or the sandbox failed (`error`), or policy, confirmation, limits or auth refused it (`denied`). */
export type CallOutcome = "success" | "failure" | "error" | "denied";

/** What the egress guard decided for one connection. */
export type EgressVerdict = "allowed" | "refused";

/** One finished call, as the metrics see it. */
export interface CallRecord {
  /** The tool's name. */
  tool: string;
  /** Its toolset. */
  toolset: string;
  /** Who called (the identity name; `default` for the server's own token, `local` on stdio or the CLI). */
  identity: string;
  /** How it ended. */
  outcome: CallOutcome;
  /** How long it took, in ms. */
  durationMs: number;
}

/**
 * `corral_sandbox_rss_bytes` and `corral_sandbox_pss_bytes`: each process
 * sandbox running now (its whole process tree, read from `/proc` when the
 * metrics are read), by its label and its process id (never its principal:
 * a session id or a token's hash is no label to publish). A worker
 * sandbox's memory is the host's own (`process_resident_memory_bytes`).
 */
function _memoryGauges(registers: client.Registry[]): void {
  const gauge = (name: string, help: string, field: "rss" | "pss") =>
    new client.Gauge({
      name,
      help,
      labelNames: ["sandbox", "pid"] as const,
      registers,
      async collect() {
        const read = await _sandboxMemory();
        this.reset();
        for (const r of read) this.set({ sandbox: r.label, pid: String(r.pid) }, r[field]);
      },
    });
  gauge("corral_sandbox_rss_bytes", "Resident memory of each process sandbox", "rss");
  gauge("corral_sandbox_pss_bytes", "Proportional memory of each process sandbox", "pss");
}

let _lastRead: { at: number; read: Promise<_SandboxMemory[]> } | undefined;

interface _SandboxMemory {
  label: string;
  pid: number;
  rss: number;
  pss: number;
}

/**
 * The live process sandboxes' memory, read once for both gauges of a scrape
 * (one run of core/base/process_memory.sh): a read started within the last
 * second is shared.
 */
function _sandboxMemory(): Promise<_SandboxMemory[]> {
  const now = performance.now();
  if (_lastRead && now - _lastRead.at < 1000) return _lastRead.read;
  const running = [...runningSandboxes].flatMap((s) =>
    s.pid === undefined ? [] : [{ label: s.options.label, pid: s.pid }]
  );
  const read = processTreeMemory(running.map((s) => s.pid)).then((m) =>
    running.flatMap((s) => {
      const got = m.get(s.pid);
      return got ? [{ ...s, rss: got.rss, pss: got.pss }] : [];
    })
  );
  _lastRead = { at: now, read };
  return read;
}

/** Upper bounds of the duration histogram, in seconds. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The metrics of one process. */
export class CorralMetrics {
  /** The Prometheus registry (its own, never prom-client's global one). */
  readonly registry: client.Registry = new client.Registry();
  #calls: client.Counter<"tool" | "toolset" | "identity" | "outcome">;
  #duration: client.Histogram<"tool" | "outcome">;
  #sandboxes: client.Gauge;
  #queue: client.Gauge;
  #egress: client.Counter<"verdict">;
  #authFailures: client.Counter<"status">;
  #otel = _otelInstruments();

  /** Fresh metrics, registered in {@link registry}. */
  constructor() {
    const registers = [this.registry];
    this.#calls = new client.Counter({
      name: "corral_calls_total",
      help: "Tool calls by tool, toolset, identity and outcome",
      labelNames: ["tool", "toolset", "identity", "outcome"] as const,
      registers,
    });
    this.#duration = new client.Histogram({
      name: "corral_call_duration_seconds",
      help: "Tool call duration, from the request to the result",
      labelNames: ["tool", "outcome"] as const,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#sandboxes = new client.Gauge({
      name: "corral_sandboxes_live",
      help: "Sandboxes running now",
      registers,
    });
    _memoryGauges(registers);
    this.#queue = new client.Gauge({
      name: "corral_call_queue_depth",
      help: "Calls waiting for a slot of the instance's call gate",
      registers,
    });
    this.#egress = new client.Counter({
      name: "corral_egress_connections_total",
      help: "Outgoing connections of tools by the egress guard's verdict",
      labelNames: ["verdict"] as const,
      registers,
    });
    this.#authFailures = new client.Counter({
      name: "corral_auth_failures_total",
      help: "HTTP requests refused by authentication (401) or for an identity not admitted (403)",
      labelNames: ["status"] as const,
      registers,
    });
  }

  /** Count one finished call and its duration. */
  recordCall(r: CallRecord): void {
    this.#calls.inc({ tool: r.tool, toolset: r.toolset, identity: r.identity, outcome: r.outcome });
    this.#duration.observe({ tool: r.tool, outcome: r.outcome }, r.durationMs / 1000);
    const attrs: Attributes = {
      "corral.tool": r.tool,
      "corral.toolset": r.toolset,
      "corral.identity": r.identity,
      "corral.outcome": r.outcome,
    };
    this.#otel.calls.add(1, attrs);
    this.#otel.duration.record(r.durationMs, {
      "corral.tool": r.tool,
      "corral.outcome": r.outcome,
    });
  }

  /** A sandbox started (+1) or ended (-1). */
  sandboxes(delta: 1 | -1): void {
    this.#sandboxes.inc(delta);
    this.#otel.sandboxes.add(delta);
  }

  /** The call gate's queue now holds `depth` calls. */
  queueDepth(depth: number): void {
    const before = this.#queueNow;
    this.#queueNow = depth;
    this.#queue.set(depth);
    if (depth !== before) this.#otel.queue.add(depth - before);
  }
  #queueNow = 0;

  /** One outgoing connection with the egress guard's verdict. */
  egress(verdict: EgressVerdict): void {
    this.#egress.inc({ verdict });
    this.#otel.egress.add(1, { "corral.verdict": verdict });
  }

  /** One request refused by authentication (`401`) or for its identity (`403`). */
  authFailure(status: number): void {
    this.#authFailures.inc({ status: String(status) });
    this.#otel.authFailures.add(1, { "corral.status": status });
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** The content type of {@link render}'s text. */
  get contentType(): string {
    return this.registry.contentType;
  }
}

function _otelInstruments() {
  const meter = otelMetrics.getMeter("corral");
  return {
    calls: meter.createCounter("corral.calls", { description: "Tool calls by outcome" }),
    duration: meter.createHistogram("corral.call.duration", {
      description: "Tool call duration",
      unit: "ms",
    }),
    sandboxes: meter.createUpDownCounter("corral.sandboxes.live", {
      description: "Sandboxes running now",
    }),
    queue: meter.createUpDownCounter("corral.call.queue_depth", {
      description: "Calls waiting for a slot",
    }),
    egress: meter.createCounter("corral.egress.connections", {
      description: "Outgoing connections by verdict",
    }),
    authFailures: meter.createCounter("corral.auth.failures", {
      description: "HTTP requests refused by authentication",
    }),
  };
}

/**
 * The process's metrics: every part of corral records here (the registry
 * through ../base/metrics_sink.ts, which forwards here from the moment this
 * module is loaded).
 */
export const telemetry: CorralMetrics = new CorralMetrics();
installMetrics(telemetry);
