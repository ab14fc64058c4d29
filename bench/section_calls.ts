/**
 * Sections 1 and 2 of the benchmarks: warm call latency and throughput of
 * the worker and process sandboxes against their bare baselines.
 *
 * @module
 */
import type { CallsResult } from "./calls.ts";
import { BENCH, fmtMs, fmtRate, median, runChild, timeDeno } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";

/** Run sections 1 and 2; returns their Markdown. */
export async function sectionCalls(sizes: Sizes): Promise<string> {
  log(`1+2. warm calls: ${sizes.calls} sequential per variant, then ${sizes.calls} concurrent`);
  const r = await runChild<CallsResult>("calls.ts", [String(sizes.calls), String(sizes.rounds)]);
  const L = r.latency;
  const labels: Record<string, string> = {
    direct: "direct in-process function call",
    invokeTool: "in-process `invokeTool` (validation + contract, no sandbox)",
    bareWorker: "bare Web Worker echo round trip",
    bareChild: "bare child-process stdio echo round trip",
    corralWorker: "**corral, worker sandbox** (`Registry.call`)",
    corralProcess: "**corral, process sandbox** (`Registry.call`)",
    corralLayered: "corral, process sandbox holding a write layer (settled after each call)",
  };
  const rows = Object.entries(labels).map(([k, label]) => [
    label,
    fmtMs(L[k].p50),
    fmtMs(L[k].p99),
    fmtMs(L[k].mean),
    spread(L[k].roundMedians, fmtMs),
    x(L[k].p50 / L.bareWorker.p50),
  ]);
  // A process sandbox is one child running the tool code in its own realm (no worker
  // inside since the performance issue): its bare baseline is a bare child's round trip.
  const pSum50 = L.bareChild.p50;
  const pSum99 = L.bareChild.p99;
  goal({
    id: "1a",
    goal: "warm call, worker sandbox, p50 ≤ 1.5× bare worker round trip",
    corral: fmtMs(L.corralWorker.p50),
    baseline: fmtMs(L.bareWorker.p50),
    ratio: L.corralWorker.p50 / L.bareWorker.p50,
    target: "≤ 1.5×",
    pass: L.corralWorker.p50 / L.bareWorker.p50 <= 1.5,
  });
  goal({
    id: "1b",
    goal: "warm call, worker sandbox, p99 ≤ 1.5× bare worker round trip",
    corral: fmtMs(L.corralWorker.p99),
    baseline: fmtMs(L.bareWorker.p99),
    ratio: L.corralWorker.p99 / L.bareWorker.p99,
    target: "≤ 1.5×",
    pass: L.corralWorker.p99 / L.bareWorker.p99 <= 1.5,
  });
  goal({
    id: "1c",
    goal: "warm call, process sandbox, p50 ≤ 1.5× bare child-process round trip",
    corral: fmtMs(L.corralProcess.p50),
    baseline: fmtMs(pSum50),
    ratio: L.corralProcess.p50 / pSum50,
    target: "≤ 1.5×",
    pass: L.corralProcess.p50 / pSum50 <= 1.5,
  });
  goal({
    id: "1d",
    goal: "warm call, process sandbox, p99 ≤ 1.5× bare child-process round trip",
    corral: fmtMs(L.corralProcess.p99),
    baseline: fmtMs(pSum99),
    ratio: L.corralProcess.p99 / pSum99,
    target: "≤ 1.5×",
    pass: L.corralProcess.p99 / pSum99 <= 1.5,
  });

  const T = r.throughput;
  const tLabels: Record<string, string> = {
    bareWorker: "bare Web Worker echo, pipelined",
    bareChild: "bare child-process stdio echo, pipelined",
    corralWorker: "**corral, worker sandbox**, concurrent `Registry.call`",
    corralProcess: "**corral, process sandbox**, concurrent `Registry.call`",
  };
  const bw = median(T.bareWorker);
  const tRows = Object.entries(tLabels).map(([k, label]) => [
    label,
    fmtRate(median(T[k])),
    spread(T[k], fmtRate),
    String(T[k].length),
    x(median(T[k]) / bw),
  ]);

  let micro = "";
  try {
    micro = await denoBenchInProcess();
  } catch (err) {
    micro = `deno bench failed: ${(err as Error).message}`;
  }

  return [
    SECTIONS[1],
    "",
    `A no-op tool (\`bench/noop_tools.ts\`: no arguments, returns \`{success: true}\`) called ` +
    `${r.latency.corralWorker.n} times sequentially per variant after a warm-up, in ${r.rounds} ` +
    "rounds that interleave the variants (so that noise from other work hits all alike). The " +
    "bare baselines carry the same message corral sends for a call. Spread: the lowest and " +
    "highest median of the rounds.",
    "",
    table(["variant", "p50", "p99", "mean", "p50 spread (rounds)", "p50 vs bare worker"], rows),
    "",
    "The in-process part, with Deno's own `deno bench` (`bench/inprocess_bench.ts`):",
    "",
    micro,
    "",
    SECTIONS[2],
    "",
    `${r.calls} no-op calls issued at once (\`Promise.all\`), repeated ${T.corralWorker.length} ` +
    "times; the bare baselines post the same number of call-sized messages at once and wait " +
    "for every echo. Spread: lowest and highest rate of the repetitions. No goal is set on " +
    "these in-process rates; the throughput goal is the one over HTTP, with clients on the " +
    "other side of a socket (section 8).",
    "",
    table(["variant", "median rate", "spread", "runs", "vs bare worker"], tRows),
  ].join("\n");
}

/** `deno bench` of the in-process call path, for the report. */
export async function denoBenchInProcess(): Promise<string> {
  const res = await timeDeno(["bench", "-A", "--json", `${BENCH}inprocess_bench.ts`]);
  if (res.code !== 0) throw new Error(res.stderr.slice(-500));
  const data = JSON.parse(res.stdout) as {
    benches: Array<{ name: string; results: Array<{ ok?: Record<string, number> }> }>;
  };
  const rows = data.benches.map((b) => {
    const ok = b.results[0].ok ?? {};
    return [b.name, fmtMs(ok.avg / 1e6), fmtMs(ok.p75 / 1e6), fmtMs(ok.p99 / 1e6), String(ok.n)];
  });
  return table(["deno bench", "avg", "p75", "p99", "samples"], rows);
}
