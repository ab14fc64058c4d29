/**
 * Section 10 of the benchmarks: a sandbox per principal (issue 20). What
 * each MCP session's own sandbox costs in memory, and its first call
 * against a call in a session whose sandbox runs (before, every session's
 * calls of a toolset shared one sandbox: that is the baseline).
 *
 * @module
 */
import { fmtMs, median, runChild } from "./lib.ts";
import { log, SECTIONS, type Sizes, table } from "./report.ts";
import type { SessionsResult } from "./sessions.ts";

/** Run section 10; returns its Markdown. */
export async function sectionSessions(sizes: Sizes): Promise<string> {
  const n = sizes.sessions;
  log(`10. a sandbox per principal: 1 + ${n} MCP sessions over HTTP`);
  const r = await runChild<SessionsResult>("sessions.ts", [String(n), "4"]);
  const mib = (v: number) => `${v.toFixed(0)} MiB`;
  const per = (a: number, b: number) => `${((b - a) / n).toFixed(1)} MiB`;
  return [
    SECTIONS[11],
    "",
    `\`bench/sessions.ts\`: one \`corral mcp --http\`, MCP sessions opened one after another, each ` +
    "calling `WordCount` (its first call starts its own sandbox: a principal never shares one), " +
    "then again. Memory is summed over the server's process tree (RSS counts the shared pages of " +
    "deno once per process; PSS divides them). Before, every session shared the first session's " +
    "sandbox: the one-session figures are what any number of sessions cost then.",
    "",
    table(
      ["", "1 session", `${1 + n} sessions`, "per extra session"],
      [
        ["processes (host and sandboxes)", String(r.oneProcesses), String(r.manyProcesses), ""],
        ["RSS", mib(r.oneRss), mib(r.manyRss), per(r.oneRss, r.manyRss)],
        ["PSS", mib(r.onePss), mib(r.manyPss), per(r.onePss, r.manyPss)],
      ],
    ),
    "",
    table(
      ["call", "median", "min", "max"],
      [
        [
          "first call of a new session (its sandbox starts)",
          fmtMs(median(r.firstMs)),
          fmtMs(Math.min(...r.firstMs)),
          fmtMs(Math.max(...r.firstMs)),
        ],
        [
          "a call in a session whose sandbox runs",
          fmtMs(median(r.againMs)),
          fmtMs(Math.min(...r.againMs)),
          fmtMs(Math.max(...r.againMs)),
        ],
      ],
    ),
  ].join("\n");
}
