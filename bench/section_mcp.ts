/**
 * Section 6 of the benchmarks: `corral mcp` against the official MCP
 * filesystem server, the same client and the same file: call latency (p50,
 * p99) and start-up to the first answer.
 *
 * @module
 */
import type { McpResult, ServerResult } from "./mcp.ts";
import { fmtMs, median, runChild, WARMUP_CALLS } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table } from "./report.ts";

/** Run section 6; returns its Markdown. */
export async function sectionMcp(sizes: Sizes): Promise<string> {
  log(
    `6. MCP: ${sizes.mcpCalls} sequential reads of a 10 KB file per server, ` +
      `${sizes.mcpStarts} start-ups each`,
  );
  const r = await runChild<McpResult>("mcp.ts", [String(sizes.mcpCalls), String(sizes.mcpStarts)]);
  const fs = r.servers.filesystem;
  const cr = r.servers.corral;
  const start = (s: ServerResult) => median(s.startMs ?? []);
  const row = (label: string, s: ServerResult) =>
    s.error
      ? [label, `error: ${s.error.replaceAll("|", "\\|")}`, "", "", "", "", "", "", "", ""]
      : [
        label,
        `\`${s.tool}\``,
        fmtMs(s.warmupP50!),
        fmtMs(s.p50!),
        fmtMs(s.p99!),
        fmtMs(s.mean!),
        spread(s.blockMedians!, fmtMs),
        _cpu(s),
        s.startMs ? fmtMs(start(s)) : "–",
        s.startMs ? spread(s.startMs, fmtMs) : "–",
      ];
  const ok = !fs.error && !cr.error;
  const compare = (
    id: string,
    what: string,
    value: (s: ServerResult) => number,
    limit: number,
  ) => {
    const ratio = ok ? value(cr) / value(fs) : NaN;
    goal({
      id,
      goal: `MCP, corral ${what} ≤ ${limit.toFixed(1)}× the official filesystem server's ` +
        "(same SDK client, stdio)",
      corral: cr.error ? "error" : fmtMs(value(cr)),
      baseline: fs.error ? "error" : fmtMs(value(fs)),
      ratio,
      target: `≤ ${limit.toFixed(1)}×`,
      pass: ok ? ratio <= limit : false,
    });
  };
  compare("6a", "call p50", (s) => s.p50!, 1.0);
  compare("6b", "call p99", (s) => s.p99!, 1.0);
  compare("6c", "start-up to the first answer (median)", start, 1.2);
  return [
    SECTIONS[6],
    "",
    `The official MCP filesystem server (\`@modelcontextprotocol/server-filesystem\`, pinned in ` +
    "deno.json, run with `deno run -A`) and `corral mcp` (the flags of `deno task corral`, an " +
    "empty config directory, a discovery cache of its own), each driven by the same SDK client " +
    "(`@modelcontextprotocol/sdk` `Client` + `StdioClientTransport`) reading the same " +
    `${r.fileBytes}-byte file ${r.calls} times sequentially, after a warm-up of ` +
    `${
      Math.min(WARMUP_CALLS, r.calls)
    } calls each (its p50 is shown: JIT tiering); blocks of calls ` +
    "alternate between the servers. Spread: lowest and highest median of the blocks. " +
    "Start-up: spawn to the first answer (initialize, list the tools, the first read); the " +
    "first start of each server fills the caches and is not counted, then each is started " +
    `${sizes.mcpStarts} more time(s), the two alternately; median and spread (fastest and ` +
    "slowest) of those.",
    "",
    table(
      [
        "server",
        "tool",
        "warm-up p50",
        "p50",
        "p99",
        "mean",
        "p50 spread (blocks)",
        "CPU a call (own + children)",
        "start-up",
        "start spread",
      ],
      [
        row("official filesystem server (baseline)", fs),
        row("**corral mcp**", cr),
      ],
    ),
    "",
    "`corral mcp` on stdio serves every message through the SDK 2.4 stdio transport: its " +
    "own `tools/call` lane and stdout writer, weighed here against that path, gained under " +
    "10 % of the call's p50 on a quiet machine and were removed (issue 42; the figures are " +
    "in the Analysis). CPU a call: the server process's own CPU time (user + system, from " +
    "/proc) plus its sandboxes', over its measured calls.",
  ].join("\n");
}

function _cpu(s: ServerResult): string {
  return s.cpuMs ? `${fmtMs(s.cpuMs.own)} + ${fmtMs(s.cpuMs.children)}` : "–";
}
