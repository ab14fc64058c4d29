/**
 * Section 3 of the benchmarks: cold start of `corral call` against an
 * empty `deno run`.
 *
 * @module
 */
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { ROOT } from "../testing/paths.ts";
import { BENCH, fmtMs, median, summary, timeDeno } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";
import { benchSrt } from "./hosted.ts";

/** Run section 3; returns its Markdown. */
export async function sectionColdStart(sizes: Sizes, base: string): Promise<string> {
  log(`3. cold start: ${sizes.coldRuns} runs per command`);
  const ws = `${base}/cold_ws`;
  const cache = `${base}/cold_cache`;
  await Deno.mkdir(ws, { recursive: true });
  await Deno.writeTextFile(`${ws}/small.txt`, "one two three\nfour five six\n".repeat(20));
  const call = [
    "run",
    ...CORRAL_FLAGS,
    `${ROOT}main.ts`,
    "call",
    "WordCount",
    "--args",
    '{"filepath":"small.txt"}',
    "--quiet",
  ];
  // The call runs from the host bundle (core/cli/host_bundle.ts), made first; `require` makes a
  // call that could not use it fail rather than measure the modules' path unnoticed.
  const made = await timeDeno(["run", ...CORRAL_FLAGS, `${ROOT}main.ts`, "__bundle"], {});
  if (made.code !== 0) throw new Error(`corral __bundle failed: ${made.stderr.slice(-500)}`);
  const env = { CORRAL_CACHE_DIR: cache, CORRAL_BUNDLE: "require" };
  const modules = { CORRAL_CACHE_DIR: cache, CORRAL_BUNDLE: "off" };
  const srt = await benchSrt();
  const commands: Array<
    { key: string; label: string; args: string[]; env?: Record<string, string>; exec?: string }
  > = [
    {
      key: "empty",
      label: "`deno run` of an empty script (baseline)",
      args: ["run", `${BENCH}empty.ts`],
    },
    {
      key: "help",
      label: "`corral --help` (host modules only, no registry)",
      args: ["run", ...CORRAL_FLAGS, `${ROOT}main.ts`, "--help"],
      env,
    },
    {
      key: "call",
      label: "**`corral call WordCount`**, discovery cache warm",
      args: call,
      env,
    },
    {
      key: "modules",
      label: "`corral call WordCount` from corral's modules (`CORRAL_BUNDLE=off`)",
      args: call,
      env: modules,
    },
    {
      key: "srt",
      label: "srt 0.0.83 running `deno run` of the same tool file (its harness) with the same " +
        "grant (`--allow-read` of the workspace)",
      exec: srt,
      args: [
        Deno.execPath(),
        "run",
        `--allow-read=${ws}`,
        `${ROOT}toolsets/files/word_count.ts`,
        "--filepath",
        "small.txt",
        "--json",
      ],
    },
    {
      key: "nocache",
      label: "`corral call WordCount --no-cache` (first run ever: discovery too)",
      args: [...call, "--no-cache"],
      env,
    },
  ];
  // Warm the discovery cache and Deno's own caches; check that the call works.
  const first = await timeDeno(call, { cwd: ws, env });
  if (first.code !== 0 || !first.stdout.includes('"words"')) {
    throw new Error(`corral call WordCount failed (${first.code}): ${first.stderr.slice(-800)}`);
  }
  for (const c of commands) await timeDeno(c.args, { cwd: ws, env: c.env, exec: c.exec });
  const times: Record<string, number[]> = Object.fromEntries(commands.map((c) => [c.key, []]));
  for (let i = 0; i < sizes.coldRuns; i++) {
    for (const c of commands) {
      const r = await timeDeno(c.args, { cwd: ws, env: c.env, exec: c.exec });
      if (r.code !== 0 || (c.key === "srt" && !r.stdout.includes('"words"'))) {
        throw new Error(`${c.label} failed (${r.code}): ${r.stderr.slice(-500)}`);
      }
      times[c.key].push(r.ms);
    }
  }
  const empty = median(times.empty);
  const rows = commands.map((c) => {
    const s = summary(times[c.key]);
    return [
      c.label,
      fmtMs(s.median),
      spread(times[c.key], fmtMs),
      String(s.n),
      x(s.median / empty),
    ];
  });
  const callMs = median(times.call), srtMs = median(times.srt), noCache = median(times.nocache);
  goal({
    id: "3",
    goal: "cold start, `corral call WordCount` ≤ 4× `deno run` of an empty script",
    corral: fmtMs(callMs),
    baseline: fmtMs(empty),
    ratio: callMs / empty,
    target: "≤ 4×",
    pass: callMs / empty <= 4,
  });
  goal({
    id: "3b",
    goal: "the same cold call ≤ srt 0.0.83 running `deno run` of the same tool file with the " +
      "same grant",
    corral: fmtMs(callMs),
    baseline: fmtMs(srtMs),
    ratio: callMs / srtMs,
    target: "≤ 1.0×",
    pass: callMs / srtMs <= 1,
  });
  goal({
    id: "3c",
    goal: "first call ever (`--no-cache`: discovery too) ≤ 8× `deno run` of an empty script",
    corral: fmtMs(noCache),
    baseline: fmtMs(empty),
    ratio: noCache / empty,
    target: "≤ 8×",
    pass: noCache / empty <= 8,
  });
  return [
    SECTIONS[3],
    "",
    "Whole processes, wall time from spawn to exit, measured by the bench script. corral runs " +
    "with the flags of `deno task corral` on a 600-byte file, in a workspace with no " +
    "`corral.json`; the commands alternate run by run. Spread: fastest and slowest run.",
    "",
    table(["command", "median", "spread", "runs", "vs empty script"], rows),
  ].join("\n");
}
