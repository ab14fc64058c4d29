/**
 * `deno task bench`: measure corral against its baselines in one run and
 * write the results to BENCHMARKS.md. Every goal but one is a ratio to a
 * baseline measured side by side in the same run, so the verdicts hold
 * across machines; the exception (4b, cold discovery per plugin) is an
 * absolute limit and says so.
 *
 *     deno task bench                 # full run, rewrites BENCHMARKS.md
 *     deno task bench --smoke         # tiny counts, seconds; writes a temp file and checks it
 *     deno task bench --out FILE      # write the report elsewhere
 *     deno task bench --only 1,3      # some sections only (the report says which were skipped)
 *
 * Sections: 1 warm call latency, 2 throughput, 3 cold start, 4 discovery,
 * 5 memory, 6 MCP against the official filesystem server, 7 the namespace's
 * cost (fd binding against by-name binds; a cold call against the report
 * before), 8 MCP over HTTP against a bare SDK server (calls per second), 9 a hosted MCP
 * server (the official filesystem server run by node, wrapped by srt, hosted by corral), 10 a
 * sandbox per principal, 11 a team (many sessions from many identities; identity overhead), 12
 * settling a call's changes (against `cp -a`; the host's memory while it settles), 13 a day of
 * serving (one session, 20,000 calls: what the host grows, what it gives back).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ROOT } from "../testing/paths.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { BENCH, sig } from "./lib.ts";
import { FULL, goal, goals, log, machine, SECTIONS, SMOKE, table, verdict, x } from "./report.ts";
import { describeLoad, watchLoad } from "./load_watch.ts";
import { sectionCalls } from "./section_calls.ts";
import { sectionColdStart } from "./section_cold_start.ts";
import { sectionDiscovery } from "./section_discovery.ts";
import { sectionMemory } from "./section_memory.ts";
import { sectionMcp } from "./section_mcp.ts";
import { sectionNamespace } from "./section_namespace.ts";
import { sectionHttp } from "./section_http.ts";
import { sectionHosted } from "./section_hosted.ts";
import { sectionSessions } from "./section_sessions.ts";
import { sectionTeam } from "./section_team.ts";
import { sectionSettle } from "./section_settle.ts";
import { sectionSoak } from "./section_soak.ts";

export { SECTIONS } from "./report.ts";

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      smoke: { type: "boolean" },
      out: { type: "string" },
      only: { type: "string" },
    },
  });
  const smoke = values.smoke ?? false;
  const sizes = smoke ? SMOKE : FULL;
  const only = values.only ? new Set(values.only.split(",").map((s) => s.trim())) : undefined;
  const want = (n: string) => !only || only.has(n);
  const out = values.out ??
    (smoke
      ? await Deno.makeTempFile({ prefix: "corral_bench_", suffix: ".md" })
      : `${ROOT}BENCHMARKS.md`);
  const base = await tempDir("corral_bench_");
  const started = new Date();
  const t0 = performance.now();
  const loadBefore = Deno.loadavg();
  log(`${smoke ? "smoke" : "full"} run; report: ${out}`);

  const parts: string[] = [];
  // A section that ran under load (bench/load_watch.ts) is run once more; if the machine is
  // still busy, its goals say UNRELIABLE instead of PASS or MISS. The smoke run never repeats.
  const repeats = smoke ? 0 : 1;
  // Each run of a section gets a folder of its own: a repeat starts as cold as the first run.
  const attempt = async (name: string, heading: string, fn: (dir: string) => Promise<string>) => {
    if (!want(name)) {
      parts.push(`${heading}\n\nSkipped in this run (\`--only ${values.only}\`).`);
      return;
    }
    const mark = goals.length;
    for (let run = 0;; run++) {
      goals.splice(mark);
      const dir = `${base}/section${name}_run${run}`;
      await Deno.mkdir(dir, { recursive: true });
      const done = watchLoad();
      let part: string;
      try {
        part = await fn(dir);
      } catch (err) {
        log(`section ${name} failed: ${(err as Error).message}`);
        parts.push(`${heading}\n\nFailed in this run: ${(err as Error).message}`);
        goal({
          id: name,
          goal: `${heading.replace(/^## /, "")}: could not be measured`,
          corral: "error",
          baseline: "",
          ratio: NaN,
          target: "",
          pass: false,
        });
        return;
      }
      const load = done();
      if (load.loaded && run < repeats) {
        log(`section ${name} ran under load (${describeLoad(load, false)}); once more`);
        continue;
      }
      if (load.loaded) {
        for (const g of goals.slice(mark)) g.unreliable = `section ${name} ran under load`;
      }
      parts.push(`${part}\n\n${describeLoad(load, run > 0)}`);
      return;
    }
  };
  try {
    await attempt("1", `${SECTIONS[1]}\n\n${SECTIONS[2]}`, () => sectionCalls(sizes));
    await attempt("3", SECTIONS[3], (dir) => sectionColdStart(sizes, dir));
    await attempt("4", SECTIONS[4], (dir) => sectionDiscovery(sizes, dir));
    await attempt("5", SECTIONS[5], () => sectionMemory(sizes));
    await attempt("6", SECTIONS[6], () => sectionMcp(sizes));
    await attempt("7", SECTIONS[7], (dir) => sectionNamespace(sizes, dir));
    await attempt("8", SECTIONS[8], () => sectionHttp(sizes));
    await attempt("9", SECTIONS[10], () => sectionHosted(sizes));
    await attempt("10", SECTIONS[11], () => sectionSessions(sizes));
    await attempt("11", SECTIONS[12], () => sectionTeam(sizes));
    await attempt("12", SECTIONS[13], () => sectionSettle(sizes, base));
    await attempt("13", SECTIONS[14], () => sectionSoak(sizes));
  } finally {
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
  const seconds = (performance.now() - t0) / 1000;
  const loadAfter = Deno.loadavg();

  let analysis = "";
  try {
    analysis = (await Deno.readTextFile(`${BENCH}analysis.md`)).trim();
  } catch {
    analysis = "(bench/analysis.md is missing)";
  }

  const passed = goals.filter((g) => g.pass === true && !g.unreliable).length;
  const unreliable = goals.filter((g) => g.unreliable).length;
  const report = [
    "# corral benchmarks",
    "",
    `Written by \`deno task bench${smoke ? " --smoke" : ""}\` (\`bench/run.ts\`); do not edit by ` +
    "hand: the prose under Analysis comes from `bench/analysis.md`. Every goal but 4b is a " +
    "ratio to a baseline measured side by side in the same run, so the verdicts carry across " +
    "machines; absolute times do not (4b is an absolute limit, and says so).",
    "",
    ...machine(),
    `- Date: ${started.toISOString()}; run time ${sig(seconds)} s` +
    (smoke ? "; **smoke run: tiny counts, the numbers mean nothing**" : ""),
    `- Load average (1, 5, 15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(", ")}; ` +
    `after: ${loadAfter.map((l) => l.toFixed(2)).join(", ")}. Each section says how loaded ` +
    "the machine was while it ran (its Load line); a section run under load is repeated once, " +
    "then its goals say UNRELIABLE instead of PASS or MISS.",
    "",
    SECTIONS[0],
    "",
    `${passed} of ${goals.length} goals met` +
    (unreliable
      ? `; ${unreliable} UNRELIABLE: measured while other processes loaded the machine ` +
        "(each section's Load line; bench/load_watch.ts)."
      : "."),
    "",
    table(
      ["#", "goal", "corral", "baseline", "ratio", "target", "result"],
      goals.map((g) => [
        g.id,
        g.goal,
        g.corral,
        g.baseline,
        x(g.ratio),
        g.target,
        verdict(g.pass, g.unreliable),
      ]),
    ),
    "",
    ...parts.flatMap((p) => [p, ""]),
    SECTIONS[9],
    "",
    analysis,
    "",
  ].join("\n");
  await Deno.writeTextFile(out, report);
  log(`wrote ${out} in ${sig(seconds)} s: ${passed} of ${goals.length} goals met`);

  if (smoke) {
    const missing = SECTIONS.filter((s) => !report.includes(`\n${s}`));
    const failed = parts.filter((p) => p.includes("Failed in this run"));
    if (missing.length || failed.length) {
      log(
        `smoke check failed: missing ${missing.join(", ") || "nothing"}; ` +
          `${failed.length} section(s) failed`,
      );
      return 1;
    }
    log("smoke check passed: every section is in the report");
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
