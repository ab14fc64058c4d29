/**
 * Section 7 of the benchmarks: what the sandbox namespace costs, what
 * binding what was opened (fd binding, issue 20) adds to a sandbox start,
 * and a cold `corral call` now against the last report before it.
 *
 * @module
 */
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { ROOT } from "../testing/paths.ts";
import { fmtMs, median, runChild, timeDeno } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";

interface _Variant {
  coldMs: number;
  warmMs: number;
  startMs: number;
  cold: number[];
  calls: number;
}

interface _Result {
  withNs: _Variant;
  byName: _Variant;
  without: _Variant;
  /** Today's namespace without its syscall filter (`"seccomp": "off"`). */
  unfiltered: _Variant;
  launch: { fd: number[]; unsealed: number[]; byName: number[] };
}

/** The figures before fd binding, quoted from BENCHMARKS.md at commit 3389c7d. */
const _BEFORE = {
  commit: "3389c7d",
  date: "2026-12-01T15:07:59Z",
  /** Section 3: cold `corral call WordCount` (warm discovery cache), 15 runs. */
  cliWordCount: { median: 338, min: 279, max: 354 },
  /** Section 7: cold call with the namespace and without, 15 runs each. */
  nsCold: 139,
  offCold: 114,
};

/** Run section 7; returns its Markdown. */
export async function sectionNamespace(sizes: Sizes, base: string): Promise<string> {
  log(
    `7. namespace: ${sizes.nsRuns} cold runs, ${sizes.nsWarmCalls} warm calls each, three ways ` +
      `interleaved; ${sizes.nsLaunches} launches each; ${sizes.nsCliRuns} cold corral calls each`,
  );
  const r = await runChild<_Result>("namespace.ts", [
    String(sizes.nsRuns),
    String(sizes.nsWarmCalls),
    String(sizes.nsLaunches),
  ]);
  const cli = await _coldCli(sizes.nsCliRuns, base);
  const row = (name: string, k: "coldMs" | "warmMs" | "startMs") => [
    name,
    fmtMs(r.withNs[k]),
    fmtMs(r.byName[k]),
    fmtMs(r.without[k]),
    x(r.withNs[k] / r.byName[k]),
    x(r.withNs[k] / r.without[k]),
  ];
  return [
    SECTIONS[7],
    "",
    'The files toolset in process isolation, three ways, interleaved run by run: **today** (`"jail": ' +
    '"required"`, the shipped default, with its syscall filter: `/bin/bash` closes inherited descriptors, the launcher makes and ' +
    "joins the sandbox's cgroup, opens every bound path, checks each open is exactly the path the " +
    "policy named and hands bwrap the descriptors (`--bind-fd`) and its arguments on a pipe " +
    "(`--args`); placeholders hold protected files; pid 1 and the runtime are execute-only copies), " +
    "**by name** (the same bwrap mounts bound by name as before fd binding: the start command " +
    "rewritten in the bench only by `bench/by_name.ts`, `/bin/sh` joins the same cgroup and execs " +
    'bwrap with `--bind`/`--ro-bind`, no checks, no pipe, no sealed runtime, no filter) and **without** (`"jail": ' +
    '"off"`: the same child and cgroup, no bwrap). A cold call is the first call of a fresh registry ' +
    "(discovery from a warm cache), which starts the sandbox; a warm call is a later call of the " +
    "same sandbox; the sandbox start is the cold call minus the warm one. Medians of " +
    `${r.withNs.cold.length} cold runs and ${r.withNs.calls} warm calls per variant ` +
    "(`bench/namespace.ts`).",
    "",
    table(
      ["measurement", "today (fd)", "by name", "without", "today ÷ by name", "today ÷ without"],
      [
        row("cold call (sandbox start + call)", "coldMs"),
        row("warm call", "warmMs"),
        row("sandbox start", "startMs"),
      ],
    ),
    "",
    "Spread of the cold calls (fastest – slowest): " +
    `today ${spread(r.withNs.cold, fmtMs)}, by name ${spread(r.byName.cold, fmtMs)}, ` +
    `without ${spread(r.without.cold, fmtMs)}.`,
    "",
    _filterTable(r),
    "",
    _launchTable(r.launch),
    "",
    _beforeTable(r, cli),
  ].join("\n");
}

/** Goal 7: the jail's second wall, a cold call with the syscall filter against one without. */
function _filterTable(r: _Result): string {
  const on = r.withNs, off = r.unfiltered;
  goal({
    id: "7",
    goal: "a cold call with the jail's syscall filter ≤ 1.05× the same call without it",
    corral: fmtMs(on.coldMs),
    baseline: fmtMs(off.coldMs),
    ratio: on.coldMs / off.coldMs,
    target: "≤ 1.05×",
    pass: on.coldMs / off.coldMs <= 1.05,
  });
  const row = (name: string, k: "coldMs" | "warmMs" | "startMs") => [
    name,
    fmtMs(on[k]),
    fmtMs(off[k]),
    x(on[k] / off[k]),
  ];
  return [
    "The jail's second wall (core/seccomp/): the same namespace with its syscall filter (today, " +
    'above) and without it (`"seccomp": "off"`: no filter, no user namespace of its own, no ' +
    "`--disable-userns`), interleaved in the same rounds. Spread of the cold calls without it: " +
    `${spread(off.cold, fmtMs)}.`,
    "",
    table(["measurement", "with the filter", "without it", "with ÷ without"], [
      row("cold call (sandbox start + call)", "coldMs"),
      row("warm call", "warmMs"),
      row("sandbox start", "startMs"),
    ]),
  ].join("\n");
}

/** The launch alone, three ways. */
function _launchTable(launch: _Result["launch"]): string {
  const byName = median(launch.byName);
  return [
    "The launch alone: the start command of a real sandbox of the run above, with the runtime's " +
    "arguments replaced by `--version` (a fresh cgroup each time), started three ways, alternating, " +
    `${launch.fd.length} times each: today's; today's launcher (closing inherited descriptors, ` +
    "opening and checking every bound path, `--bind-fd`, `--args`) without the execute-only " +
    "runtime and pid 1; and by name. Wall time from spawn to exit.",
    "",
    table(["launch", "median", "spread", "runs", "vs by name"], [
      _launchRow("today (fd binding, checks, `--args`, sealed runtime)", launch.fd, byName),
      _launchRow("today's launcher, no sealed runtime", launch.unsealed, byName),
      _launchRow("by name (before)", launch.byName, byName),
    ]),
  ].join("\n");
}

/** A cold call now against the report before fd binding. */
function _beforeTable(r: _Result, cli: Record<string, number[]>): string {
  const b = _BEFORE;
  return [
    "A whole cold `corral call` (warm discovery cache; the flags of `deno task corral`, as in " +
    "section 3; the two commands alternate run by run) now, against the last report before fd " +
    `binding and per-session sandboxes (BENCHMARKS.md at ${b.commit}, run ${b.date}; it has no ` +
    "ListFiles figure, so WordCount of the same toolset is the one to compare).",
    "",
    table(["measurement", "now: median", "now: spread", "runs", "before", "now ÷ before"], [
      [
        "`corral call ListFiles`",
        fmtMs(median(cli.ListFiles)),
        spread(cli.ListFiles, fmtMs),
        String(cli.ListFiles.length),
        "(not measured)",
        "n/a",
      ],
      [
        "`corral call WordCount`",
        fmtMs(median(cli.WordCount)),
        spread(cli.WordCount, fmtMs),
        String(cli.WordCount.length),
        `${fmtMs(b.cliWordCount.median)} (${fmtMs(b.cliWordCount.min)} – ${
          fmtMs(b.cliWordCount.max)
        })`,
        x(median(cli.WordCount) / b.cliWordCount.median),
      ],
      [
        "section 7 cold call, with the namespace",
        fmtMs(r.withNs.coldMs),
        spread(r.withNs.cold, fmtMs),
        String(r.withNs.cold.length),
        fmtMs(b.nsCold),
        x(r.withNs.coldMs / b.nsCold),
      ],
      [
        "section 7 cold call, without",
        fmtMs(r.without.coldMs),
        spread(r.without.cold, fmtMs),
        String(r.without.cold.length),
        fmtMs(b.offCold),
        x(r.without.coldMs / b.offCold),
      ],
    ]),
    "",
    "Before and now ran at different times on a shared machine: the side-by-side rows above are the " +
    "ones to trust for the cost of fd binding; these say where a cold call stands against the report " +
    "before.",
  ].join("\n");
}

function _launchRow(name: string, times: number[], byName: number): string[] {
  const m = median(times);
  return [name, fmtMs(m), spread(times, fmtMs), String(times.length), x(m / byName)];
}

/** Cold `corral call ListFiles` and `WordCount`, alternating; wall times. */
async function _coldCli(runs: number, base: string): Promise<Record<string, number[]>> {
  const ws = `${base}/ns_cli_ws`;
  const env = { CORRAL_CACHE_DIR: `${base}/ns_cli_cache` };
  await Deno.mkdir(ws, { recursive: true });
  await Deno.writeTextFile(`${ws}/small.txt`, "one two three\nfour five six\n".repeat(20));
  const calls: Record<string, [string, string]> = {
    ListFiles: ['{"path":"."}', '"small.txt"'],
    WordCount: ['{"filepath":"small.txt"}', '"words"'],
  };
  const times: Record<string, number[]> = { ListFiles: [], WordCount: [] };
  for (let i = -1; i < runs; i++) { // run -1 warms the caches and checks the answers
    for (const [tool, [args, expect]] of Object.entries(calls)) {
      const r = await timeDeno(
        ["run", ...CORRAL_FLAGS, `${ROOT}main.ts`, "call", tool, "--args", args, "--quiet"],
        { cwd: ws, env },
      );
      if (r.code !== 0 || !r.stdout.includes(expect)) {
        throw new Error(`corral call ${tool} failed (${r.code}): ${r.stderr.slice(-500)}`);
      }
      if (i >= 0) times[tool].push(r.ms);
    }
  }
  return times;
}
