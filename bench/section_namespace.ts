/**
 * Section 7 of the benchmarks: what the sandbox namespace costs.
 *
 * @module
 */
import { fmtMs, runChild } from "./lib.ts";
import { log, SECTIONS, type Sizes, table, x } from "./report.ts";

interface _Variant {
  coldMs: number;
  warmMs: number;
  startMs: number;
  runs: number;
  calls: number;
}

/** Run section 7; returns its Markdown. */
export async function sectionNamespace(sizes: Sizes): Promise<string> {
  log(
    `7. namespace: ${sizes.nsRuns} cold runs, ${sizes.nsWarmCalls} warm calls each, with and without`,
  );
  const r = await runChild<{ withNs: _Variant; without: _Variant }>("namespace.ts", [
    String(sizes.nsRuns),
    String(sizes.nsWarmCalls),
  ]);
  const row = (name: string, k: "coldMs" | "warmMs" | "startMs") => [
    name,
    fmtMs(r.withNs[k]),
    fmtMs(r.without[k]),
    x(r.withNs[k] / r.without[k]),
  ];
  return [
    SECTIONS[7],
    "",
    'The files toolset in process isolation, with the namespace (`"jail": "required"`, the ' +
    "shipped default: `/bin/sh` makes and joins the sandbox's cgroup, then bwrap builds the mounts, then " +
    '`deno run` starts) and without it (`"jail": "off"`: the same child and cgroup, no ' +
    "bwrap). A cold call is the first call of a fresh registry (discovery from a warm cache), " +
    "which starts the sandbox; a warm call is a later call of the same sandbox; the sandbox " +
    `start is the cold call minus the warm one. Medians of ${r.withNs.runs} cold runs and ` +
    `${r.withNs.calls} warm calls per variant (\`bench/namespace.ts\`).`,
    "",
    table(["measurement", "with the namespace", "without", "ratio"], [
      row("cold call (sandbox start + call)", "coldMs"),
      row("warm call", "warmMs"),
      row("sandbox start", "startMs"),
    ]),
  ].join("\n");
}
