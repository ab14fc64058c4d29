/**
 * Section 6 of the benchmarks: `corral mcp` against the official MCP
 * filesystem server, the same client and the same file.
 *
 * @module
 */
import type { McpResult } from "./mcp.ts";
import { fmtMs, runChild } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table } from "./report.ts";

/** Run section 6; returns its Markdown. */
export async function sectionMcp(sizes: Sizes): Promise<string> {
  log(`6. MCP: ${sizes.mcpCalls} sequential reads of a 10 KB file per server`);
  const r = await runChild<McpResult>("mcp.ts", [String(sizes.mcpCalls)]);
  const fs = r.servers.filesystem;
  const cr = r.servers.corral;
  const row = (label: string, s: typeof fs) =>
    s.error ? [label, `error: ${s.error.replaceAll("|", "\\|")}`, "", "", "", "", ""] : [
      label,
      `\`${s.tool}\``,
      fmtMs(s.p50!),
      fmtMs(s.p99!),
      fmtMs(s.mean!),
      spread(s.blockMedians!, fmtMs),
      fmtMs(s.startMs!),
    ];
  const ok = !fs.error && !cr.error;
  goal({
    id: "6",
    goal: "MCP, corral p50 ≤ 1.0× official filesystem server p50 (same SDK client, stdio)",
    corral: cr.error ? "error" : fmtMs(cr.p50!),
    baseline: fs.error ? "error" : fmtMs(fs.p50!),
    ratio: ok ? cr.p50! / fs.p50! : NaN,
    target: "≤ 1.0×",
    pass: ok ? cr.p50! / fs.p50! <= 1.0 : false,
  });
  return [
    SECTIONS[6],
    "",
    `The official MCP filesystem server (\`@modelcontextprotocol/server-filesystem\`, pinned in ` +
    "deno.json, run with `deno run -A`) and `corral mcp` (the flags of `deno task corral`), " +
    "each driven by the same SDK client (`@modelcontextprotocol/sdk` `Client` + " +
    `\`StdioClientTransport\`) reading the same ${r.fileBytes}-byte file ${r.calls} times ` +
    "sequentially, after a warm-up; blocks of calls alternate between the servers. Spread: " +
    "lowest and highest median of the blocks. Start-up: spawn to the first answer.",
    "",
    table(["server", "tool", "p50", "p99", "mean", "p50 spread (blocks)", "start-up"], [
      row("official filesystem server (baseline)", fs),
      row("**corral mcp**", cr),
    ]),
  ].join("\n");
}
