/**
 * Section 8 of the benchmarks: `corral mcp --http --stateless` against a
 * bare SDK server over HTTP, calls per second with 1 client and with many,
 * and goals 8a (throughput, none refused) and 8b (per-call cost flat from 1
 * client to many).
 *
 * @module
 */
import type { HttpResult, HttpRun, HttpServerResult } from "./http.ts";
import { fmtMs, fmtRate, median, runChild } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";

/** Calls per second of a run. */
export function rate(run: HttpRun): number {
  return run.calls / (run.wallMs / 1000);
}

/** Per-call cost of a run: wall time ÷ calls (ms). */
export function perCall(run: HttpRun): number {
  return run.wallMs / run.calls;
}

/** Calls of `runs` that did not come back as the file's text. */
export function refused(runs: HttpRun[]): number {
  return runs.reduce((n, r) => n + r.calls - r.ok, 0);
}

/** Run section 8; returns its Markdown. */
export async function sectionHttp(sizes: Sizes): Promise<string> {
  const { httpClients: clients, httpPerClient: each, httpReps: reps } = sizes;
  log(
    `8. MCP over HTTP: ${clients} clients × ${each} calls, and 1 client × ${clients * each}, ` +
      `${reps} repetition(s) per server`,
  );
  // Loopback must never go through a proxy of the environment.
  const noProxy = [Deno.env.get("NO_PROXY"), "127.0.0.1", "localhost"].filter(Boolean).join(",");
  const r = await runChild<HttpResult>("http.ts", [String(clients), String(each), String(reps)], {
    env: { NO_PROXY: noProxy, no_proxy: noProxy },
  });
  const bare = r.servers.bare;
  const cr = r.servers.corral;
  const ok = !bare.error && !cr.error;
  const medRate = (runs: HttpRun[]) => median(runs.map(rate));
  const medCost = (runs: HttpRun[]) => median(runs.map(perCall));
  const refusals = (s: HttpServerResult) => refused([...s.one, ...s.many]) + (s.warmupRefused ?? 0);

  const rows: string[][] = [];
  for (
    const [label, s] of [["bare SDK server (baseline)", bare], ["**corral mcp**", cr]] as const
  ) {
    if (s.error) {
      rows.push([label, "", `error: ${s.error.replaceAll("|", "\\|")}`, "", "", "", "", "", ""]);
      continue;
    }
    for (const runs of [s.one, s.many]) {
      const sum = (k: "busy" | "httpErrors" | "toolErrors" | "networkErrors") =>
        runs.reduce((n, run) => n + run[k], 0);
      rows.push([
        label,
        String(runs[0]?.clients ?? ""),
        fmtRate(medRate(runs)),
        spread(runs.map(rate), fmtRate),
        fmtMs(medCost(runs)),
        fmtMs(median(runs.map((run) => run.p50))),
        fmtMs(median(runs.map((run) => run.p99))),
        `${refused(runs)} of ${runs.reduce((n, run) => n + run.calls, 0)}`,
        `${sum("busy")} / ${sum("httpErrors")} / ${sum("toolErrors")} / ${sum("networkErrors")}`,
      ]);
    }
  }

  const crRefused = refusals(cr);
  const throughput = ok ? medRate(cr.many) / medRate(bare.many) : NaN;
  goal({
    id: "8a",
    goal: `MCP over HTTP (stateless), corral calls/s with ${clients} clients ≥ 0.5× a bare SDK ` +
      "server's, and no call refused",
    corral: cr.error ? "error" : `${fmtRate(medRate(cr.many))}, ${crRefused} refused`,
    baseline: bare.error ? "error" : fmtRate(medRate(bare.many)),
    ratio: throughput,
    target: "≥ 0.5×, 0 refused",
    pass: ok ? throughput >= 0.5 && crRefused === 0 : false,
  });
  const flat = cr.error ? NaN : medCost(cr.many) / medCost(cr.one);
  goal({
    id: "8b",
    goal: `MCP over HTTP, corral per-call cost flat: with ${clients} clients ≤ 1.3× with 1 ` +
      `(wall time ÷ calls, ${r.total} calls each)`,
    corral: cr.error ? "error" : `${fmtMs(medCost(cr.many))}/call`,
    baseline: cr.error ? "error" : `${fmtMs(medCost(cr.one))}/call`,
    ratio: flat,
    target: "≤ 1.3×",
    pass: Number.isFinite(flat) ? flat <= 1.3 : false,
  });

  const notes: string[] = [];
  if (ok) {
    notes.push(
      `Per-call cost with ${clients} clients against 1 client: bare server ` +
        `${x(medCost(bare.many) / medCost(bare.one))}, corral ${x(flat)}. Calls/s, corral ` +
        `against the bare server: 1 client ${x(medRate(cr.one) / medRate(bare.one))}, ` +
        `${clients} clients ${x(throughput)}. Warm-up refusals (counted in goal 8a): corral ` +
        `${cr.warmupRefused ?? 0}, bare ${bare.warmupRefused ?? 0}.`,
    );
  }
  for (const [name, s] of [["corral", cr], ["bare server", bare]] as const) {
    if (s.firstRefusal) {
      notes.push(`First refusal (${name}): ${s.firstRefusal.replaceAll("|", "\\|").slice(0, 300)}`);
    }
  }
  return [
    SECTIONS[8],
    "",
    "`corral mcp --http 127.0.0.1:0 --stateless --no-token` (the flags of `deno task corral`, " +
    "an empty config directory, a discovery cache of its own; its default call gate) and a " +
    "bare SDK server (`bench/bare_http_server.ts`: `Deno.serve`, a new `McpServer` and " +
    "`WebStandardStreamableHTTPServerTransport` per request, no session id, JSON answers, as " +
    "corral's stateless mode does; one `ReadFile` tool that calls `Deno.readTextFile`, no " +
    "sandbox), both on loopback and driven by the same client code in one process: plain " +
    "`fetch` POSTs of a JSON-RPC `tools/call` of `ReadFile` on the same " +
    `${r.fileBytes}-byte file (a stateless server needs no \`initialize\`), each client one ` +
    `call at a time. Each repetition makes ${r.total} calls per server twice: by 1 client, ` +
    `and by ${clients} clients at once (${each} calls each); ${r.reps} repetition(s), the ` +
    "servers' order alternating, after a warm-up of 2 calls per client. Calls/s = calls ÷ " +
    "wall time from the first request to the last answer; per-call cost = its inverse; " +
    "latency = each call's own round trip. A call is refused when it does not come back as " +
    "the file's text: HTTP 429 (the call gate's queue full), another HTTP error, a JSON-RPC " +
    "or tool error, or a network error. Medians over the repetitions; spread: lowest and " +
    "highest calls/s of the repetitions.",
    "",
    table(
      [
        "server",
        "clients",
        "calls/s",
        "spread",
        "per-call cost",
        "latency p50",
        "latency p99",
        "refused",
        "429 / HTTP / tool / network",
      ],
      rows,
    ),
    ...(notes.length ? ["", ...notes.flatMap((n, i) => (i ? ["", n] : [n]))] : []),
  ].join("\n");
}
