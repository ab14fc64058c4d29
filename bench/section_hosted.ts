/**
 * Section 9 of the benchmarks: the official MCP filesystem server run
 * directly by node, wrapped by `srt`, and hosted by corral; the same SDK
 * client reading the same 10 KB file (bench/hosted.ts): start-up to the
 * first answer, p50 and p99; and corral's hosted `tools/call` lane against the
 * plain SDK 2.4 `Client` in the same call blocks.
 *
 * @module
 */
import type { HostedResult } from "./hosted.ts";
import { DB_WAYS, type DbWay, type HostedDbResult } from "./hosted_db.ts";
import type { ServerResult } from "./mcp.ts";
import { fmtMs, median, runChild, WARMUP_CALLS } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table } from "./report.ts";

/** Run section 9; returns its Markdown. */
export async function sectionHosted(sizes: Sizes): Promise<string> {
  log(
    `9. hosted MCP server: ${sizes.mcpCalls} reads of a 10 KB file each way (node, srt, ` +
      `corral), ${sizes.mcpStarts} start-ups each`,
  );
  const r = await runChild<HostedResult>("hosted.ts", [
    String(sizes.mcpCalls),
    String(sizes.mcpStarts),
  ]);
  const { node, srt, corral } = r.servers;
  const sdk = r.servers["corral-sdk"];
  const start = (s: ServerResult) => median(s.startMs ?? []);
  const row = (label: string, s: ServerResult) =>
    s.error
      ? [label, `error: ${s.error.replaceAll("|", "\\|").slice(0, 300)}`, "", "", "", "", ""]
      : [
        label,
        fmtMs(start(s)),
        spread(s.startMs!, fmtMs),
        fmtMs(s.warmupP50!),
        fmtMs(s.p50!),
        fmtMs(s.p99!),
        spread(s.blockMedians!, fmtMs),
      ];
  const ok = (a: ServerResult, b: ServerResult) => !a.error && !b.error;
  const startRatio = ok(corral, srt) ? start(corral) / start(srt) : NaN;
  goal({
    id: "9a",
    goal: "hosted server start-up to the first answer (median): corral ≤ srt",
    corral: corral.error ? "error" : fmtMs(start(corral)),
    baseline: srt.error ? "error" : fmtMs(start(srt)),
    ratio: startRatio,
    target: "≤ 1.0×",
    pass: ok(corral, srt) ? startRatio <= 1 : false,
  });
  const p50Ratio = ok(corral, node) ? corral.p50! / node.p50! : NaN;
  goal({
    id: "9b",
    goal: "hosted server call p50: corral ≤ 1.3× the server run directly by node",
    corral: corral.error ? "error" : fmtMs(corral.p50!),
    baseline: node.error ? "error" : fmtMs(node.p50!),
    ratio: p50Ratio,
    target: "≤ 1.3×",
    pass: ok(corral, node) ? p50Ratio <= 1.3 : false,
  });
  const db = await _database(sizes);
  return [
    SECTIONS[10],
    "",
    "`@modelcontextprotocol/server-filesystem@2026.8.31` three ways: run directly by node " +
    "(no sandbox), wrapped by Anthropic's sandbox runtime (`srt`, npm " +
    "`@anthropic-ai/sandbox-runtime@0.0.83`, its default settings: bubblewrap and a domain " +
    "proxy), and hosted by corral (`corral mcp -r` with the server in corral.json: `deno run` " +
    "with the grant's flags in the bwrap namespace, cgroup limits, the call audited path and " +
    "all). Each is driven by the same SDK client over stdio reading the same " +
    `${r.fileBytes}-byte file ${r.calls} times, in blocks that rotate between the three, after a warm-up of ` +
    `${Math.min(WARMUP_CALLS, r.calls)} calls each (the same for each; its p50 is shown, as the ` +
    "cost of the first calls while the processes' JIT tiers up). " +
    "Start-up: spawn to the first answer (initialize, list the tools, the first read; for " +
    "corral that includes starting corral itself and then the hosted server on the first " +
    `call), median of ${sizes.mcpStarts} start(s) after one that filled the caches.`,
    "",
    table(
      ["way", "start-up", "start spread", "warm-up p50", "p50", "p99", "p50 spread (blocks)"],
      [row("node, direct (baseline)", node), row("srt", srt), row("**corral, hosted**", corral)],
    ),
    "",
    laneRow(corral, sdk),
    "",
    db,
  ].join("\n");
}

/**
 * corral's hand-written `tools/call` lane for hosted servers
 * (core/hosted/call_lane.ts) against the plain SDK 2.4 `Client`
 * (`CORRAL_BENCH_HOSTED_LANE=sdk`), measured in the same call blocks: the
 * gain on goal 9's p50 (issue 42: a lane gaining < 10% goes). On a busy
 * machine (load over 1 after the run) no verdict is given: it would be chance.
 */
export function laneRow(on: ServerResult, off: ServerResult | undefined): string {
  const load = Deno.loadavg()[0];
  const cpu = (s: ServerResult) =>
    s.cpuMs ? `${fmtMs(s.cpuMs.own)} + ${fmtMs(s.cpuMs.children)}` : "–";
  const cells = (): string[] => {
    if (!off || on.error || off.error) return ["error", "", "", "", "", ""];
    const gain = (off.p50! - on.p50!) / off.p50!;
    return [
      fmtMs(on.p50!),
      fmtMs(off.p50!),
      `${(100 * gain).toFixed(1)} %`,
      `${fmtMs(on.mean!)} / ${fmtMs(off.mean!)}`,
      `${cpu(on)} / ${cpu(off)}`,
      load > 1
        ? `unreliable: load ${load.toFixed(1)}`
        : gain < 0.1
        ? "**< 10 %: a candidate for removal**"
        : "keeps its place",
    ];
  };
  return [
    "corral's hand-written `tools/call` lane for hosted servers (core/hosted/call_lane.ts) " +
    "against the plain SDK 2.4 `Client` (`@modelcontextprotocol/client`), corral run a second " +
    "time with `CORRAL_BENCH_HOSTED_LANE=sdk` in the same call blocks. Gain: the p50 the lane " +
    "saves, as a share of the p50 without it. CPU a call: corral's own CPU time (user + " +
    "system, from /proc) plus its children's (the hosted server), over its measured calls.",
    "",
    table(
      [
        "lane",
        "p50 with",
        "p50 without",
        "gain",
        "mean with / without",
        "CPU a call with / without",
        "verdict",
      ],
      [["call_lane vs plain SDK client", ...cells()]],
    ),
  ].join("\n");
}

/** A database call through the egress proxy against the same server with `"jail": "off"`. */
async function _database(sizes: Sizes): Promise<string> {
  const calls = Math.max(10, Math.round(sizes.mcpCalls / 2));
  log(`9. hosted database server: ${calls} queries each way (jail off, in the jail)`);
  const r = await runChild<HostedDbResult>("hosted_db.ts", [String(calls)]);
  const { off, jailed } = r.ways;
  const ok = !off.error && !jailed.error;
  const ratio = ok ? jailed.p50! / off.p50! : NaN;
  goal({
    id: "9c",
    goal: "hosted database call p50 (PostgreSQL through the egress proxy): jail ≤ 1.3× jail off",
    corral: jailed.error ? "error" : fmtMs(jailed.p50!),
    baseline: off.error ? "error" : fmtMs(off.p50!),
    ratio,
    target: "≤ 1.3×",
    pass: ok ? ratio <= 1.3 : false,
  });
  const row = (label: string, w: DbWay) =>
    w.error
      ? [label, `error: ${w.error.replaceAll("|", "\\|").slice(0, 300)}`, "", ""]
      : [label, fmtMs(w.p50!), fmtMs(w.p99!), spread(w.blockMedians!, fmtMs)];
  const labels: Record<typeof DB_WAYS[number], string> = {
    off: '`"jail": "off"` (baseline: no namespace, no proxy)',
    jailed: "**in the jail**: through the egress proxy (the server's own connection)",
  };
  return [
    "`@modelcontextprotocol/server-postgres@0.6.2` hosted by corral (`corral mcp -r`) against a " +
    "PostgreSQL the benchmark starts on a free port, the same SDK client calling `query` " +
    `(\`${r.sql}\`) ${r.calls} times each way, in blocks that alternate: with \`"jail": "off"\` ` +
    "the server connects by itself; in the jail, granted `127.0.0.1:PORT`, its connection is a " +
    "`CONNECT` to its egress proxy, decided, connected and audited there (an npm server sends it " +
    "from its own process, core/egress/forward_direct.ts; other clients through the forwarder in " +
    "its namespace).",
    "",
    table(
      ["way", "p50", "p99", "p50 spread (blocks)"],
      DB_WAYS.map((w) => row(labels[w], r.ways[w])),
    ),
  ].join("\n");
}
