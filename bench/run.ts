/**
 * `deno task bench`: measure corral against its baselines in one run and
 * write the results to BENCHMARKS.md. Every goal is a ratio to a baseline
 * measured in the same run, so the verdicts hold across machines.
 *
 *     deno task bench                 # full run, rewrites BENCHMARKS.md
 *     deno task bench --smoke         # tiny counts, seconds; writes a temp file and checks it
 *     deno task bench --out FILE      # write the report elsewhere
 *     deno task bench --only 1,3      # some sections only (the report says which were skipped)
 *
 * Sections: 1 warm call latency, 2 throughput, 3 cold start, 4 discovery,
 * 5 memory, 6 MCP against the official filesystem server.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { CallsResult } from "./calls.ts";
import type { McpResult } from "./mcp.ts";
import type { MemoryResult } from "./memory.ts";
import {
  BENCH,
  CORRAL_FLAGS,
  fmtMiB,
  fmtMs,
  fmtRate,
  median,
  ROOT,
  runChild,
  sig,
  summary,
  timeDeno,
} from "./lib.ts";

/** Sizes of one run. */
interface Sizes {
  calls: number;
  rounds: number;
  coldRuns: number;
  plugins: number[];
  discoveryColdRuns: (n: number) => number;
  discoveryWarmRuns: number;
  extraSandboxes: number;
  mcpCalls: number;
}

const FULL: Sizes = {
  calls: 10_000,
  rounds: 5,
  coldRuns: 15,
  plugins: [0, 10, 100, 1000],
  discoveryColdRuns: (n) => n >= 1000 ? 1 : n >= 100 ? 2 : 3,
  discoveryWarmRuns: 7,
  extraSandboxes: 8,
  mcpCalls: 1000,
};

const SMOKE: Sizes = {
  calls: 200,
  rounds: 2,
  coldRuns: 2,
  plugins: [0, 1, 2, 4],
  discoveryColdRuns: () => 1,
  discoveryWarmRuns: 2,
  extraSandboxes: 1,
  mcpCalls: 20,
};

/** Section headings; the smoke run checks that the report has every one. */
export const SECTIONS = [
  "## Goals",
  "## 1. Warm call latency",
  "## 2. Throughput",
  "## 3. Cold start",
  "## 4. Discovery",
  "## 5. Memory",
  "## 6. Against a peer: MCP",
  "## Analysis",
] as const;

/** One row of the goals table. */
interface Goal {
  id: string;
  goal: string;
  corral: string;
  baseline: string;
  ratio: number;
  target: string;
  pass: boolean | null;
}

const goals: Goal[] = [];

function goal(g: Omit<Goal, "pass"> & { pass?: boolean | null }): void {
  goals.push({ ...g, pass: g.pass === undefined ? null : g.pass });
}

function verdict(pass: boolean | null): string {
  return pass === null ? "n/a" : pass ? "**PASS**" : "**MISS**";
}

function x(ratio: number): string {
  return Number.isFinite(ratio) ? `${sig(ratio)}×` : "n/a";
}

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

function spread(values: number[], fmt: (v: number) => string): string {
  return values.length > 1
    ? `${fmt(Math.min(...values))} – ${fmt(Math.max(...values))}`
    : "(1 run)";
}

function log(text: string): void {
  console.error(`[bench] ${text}`);
}

// ---------------------------------------------------------------------------
// Sections

async function sectionCalls(sizes: Sizes): Promise<string> {
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
  };
  const rows = Object.entries(labels).map(([k, label]) => [
    label,
    fmtMs(L[k].p50),
    fmtMs(L[k].p99),
    fmtMs(L[k].mean),
    spread(L[k].roundMedians, fmtMs),
    x(L[k].p50 / L.bareWorker.p50),
  ]);
  const pSum50 = L.bareChild.p50 + L.bareWorker.p50;
  const pSum99 = L.bareChild.p99 + L.bareWorker.p99;
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
    goal: "warm call, process sandbox, p50 ≤ 1.5× (bare child + bare worker)",
    corral: fmtMs(L.corralProcess.p50),
    baseline: fmtMs(pSum50),
    ratio: L.corralProcess.p50 / pSum50,
    target: "≤ 1.5×",
    pass: L.corralProcess.p50 / pSum50 <= 1.5,
  });
  goal({
    id: "1d",
    goal: "warm call, process sandbox, p99 ≤ 1.5× (bare child + bare worker)",
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
  const tw = median(T.corralWorker);
  goal({
    id: "2",
    goal: "throughput, worker sandbox ≥ 0.5× bare worker pipelined rate",
    corral: fmtRate(tw),
    baseline: fmtRate(bw),
    ratio: tw / bw,
    target: "≥ 0.5×",
    pass: tw / bw >= 0.5,
  });

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
    "for every echo. Spread: lowest and highest rate of the repetitions.",
    "",
    table(["variant", "median rate", "spread", "runs", "vs bare worker"], tRows),
  ].join("\n");
}

async function denoBenchInProcess(): Promise<string> {
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

async function sectionColdStart(sizes: Sizes, base: string): Promise<string> {
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
  const env = { CORRAL_CACHE_DIR: cache };
  const commands: Array<
    { key: string; label: string; args: string[]; env?: Record<string, string> }
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
  for (const c of commands) await timeDeno(c.args, { cwd: ws, env: c.env });
  const times: Record<string, number[]> = Object.fromEntries(commands.map((c) => [c.key, []]));
  for (let i = 0; i < sizes.coldRuns; i++) {
    for (const c of commands) {
      const r = await timeDeno(c.args, { cwd: ws, env: c.env });
      if (r.code !== 0) throw new Error(`${c.label} failed (${r.code}): ${r.stderr.slice(-500)}`);
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
  const callMs = median(times.call);
  goal({
    id: "3",
    goal: "cold start, `corral call WordCount` ≤ 4× `deno run` of an empty script",
    corral: fmtMs(callMs),
    baseline: fmtMs(empty),
    ratio: callMs / empty,
    target: "≤ 4×",
    pass: callMs / empty <= 4,
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

async function sectionDiscovery(sizes: Sizes, base: string): Promise<string> {
  log(`4. discovery: ${sizes.plugins.join(", ")} plugin files`);
  const ws = `${base}/disc_ws`;
  await Deno.mkdir(ws, { recursive: true });
  const rows: string[][] = [];
  const cold: Record<number, number> = {};
  const warm: Record<number, number> = {};
  for (const n of sizes.plugins) {
    const dir = `${base}/plugins_${n}`;
    await Deno.mkdir(dir, { recursive: true });
    for (let i = 1; i <= n; i++) {
      const id = String(i).padStart(4, "0");
      await Deno.writeTextFile(
        `${dir}/gen_${id}.ts`,
        `import { z } from "zod";\nexport const TOOL_CONFIGS = [{\n  name: "BenchGen${id}",\n` +
          `  description: "Generated benchmark plugin ${id}",\n` +
          `  input_schema: z.object({ text: z.string() }),\n` +
          `  function: ({ text }: { text: string }) => ({ success: true, text }),\n}];\n`,
      );
    }
    const args = ["run", ...CORRAL_FLAGS, `${ROOT}main.ts`, "list", "--json", "--quiet"];
    const run = async (cache: string) => {
      const r = await timeDeno(args, {
        cwd: ws,
        env: { CORRAL_TOOL_DIRS: dir, CORRAL_CACHE_DIR: cache },
      });
      if (r.code !== 0) throw new Error(`corral list failed (${r.code}): ${r.stderr.slice(-500)}`);
      const list = JSON.parse(r.stdout) as Array<{ name: string; status: string }>;
      const found = list.filter((t) => t.name.startsWith("BenchGen") && t.status === "loaded");
      if (found.length !== n) {
        throw new Error(
          `corral list shows ${found.length} of ${n} generated plugins: is CORRAL_TOOL_DIRS wired?`,
        );
      }
      return r.ms;
    };
    const coldTimes: number[] = [];
    const warmTimes: number[] = [];
    for (let i = 0; i < sizes.discoveryColdRuns(n); i++) {
      coldTimes.push(await run(`${base}/disc_cache_${n}_${i}`));
      log(`   ${n} plugins, cold: ${fmtMs(coldTimes.at(-1)!)}`);
    }
    for (let i = 0; i < sizes.discoveryWarmRuns; i++) {
      warmTimes.push(await run(`${base}/disc_cache_${n}_0`));
    }
    cold[n] = median(coldTimes);
    warm[n] = median(warmTimes);
    rows.push([
      String(n),
      fmtMs(cold[n]),
      spread(coldTimes, fmtMs),
      n === 0 ? "–" : fmtMs((cold[n] - cold[0]) / n),
      fmtMs(warm[n]),
      spread(warmTimes, fmtMs),
      x(warm[n] / warm[0]),
    ]);
  }
  const [, , mid, top] = sizes.plugins;
  goal({
    id: "4a",
    goal: `discovery, warm \`corral list --json\` with ${top} plugins ≤ 2× with 0`,
    corral: fmtMs(warm[top]),
    baseline: fmtMs(warm[0]),
    ratio: warm[top] / warm[0],
    target: "≤ 2×",
    pass: warm[top] / warm[0] <= 2,
  });
  // Linear: the cost per plugin at the largest count is no more than 1.5×
  // the cost per plugin at the count below it.
  const perTop = (cold[top] - cold[0]) / top;
  const perMid = (cold[mid] - cold[0]) / mid;
  goal({
    id: "4b",
    goal: `discovery, cold cost linear: per-plugin cost at ${top} ≤ 1.5× at ${mid}`,
    corral: `${fmtMs(perTop)}/plugin`,
    baseline: `${fmtMs(perMid)}/plugin`,
    ratio: perTop / perMid,
    target: "≤ 1.5×",
    pass: perTop / perMid <= 1.5,
  });
  return [
    SECTIONS[4],
    "",
    "`corral list --json` as a whole process, with `CORRAL_TOOL_DIRS` naming a directory of N " +
    "generated plugin files (one zod tool each; plugins use the shipped policy: process " +
    "isolation) and `CORRAL_CACHE_DIR` a discovery cache: **cold** = an empty cache (every " +
    "plugin imported in its sandbox), **warm** = the cache filled by the cold run. corral's own " +
    "`plugins/` examples load in every run. Per plugin (cold) = (cold(N) − cold(0)) / N.",
    "",
    table(
      [
        "plugins",
        "cold median",
        "cold spread",
        "cold per plugin",
        "warm median",
        "warm spread",
        "warm vs 0",
      ],
      rows,
    ),
  ].join("\n");
}

async function sectionMemory(sizes: Sizes): Promise<string> {
  log(`5. memory: built-in toolsets, ${sizes.extraSandboxes} extra sandboxes of each kind`);
  const empty = await runChild<{ rss: number; hwm: number }>("rss.ts", []);
  const m = await runChild<MemoryResult>("memory.ts", [String(sizes.extraSandboxes)], {
    flags: ["--v8-flags=--expose-gc"],
  });
  const rows = [
    ["empty `deno run` process (baseline), peak", fmtMiB(empty.hwm), "1×"],
    [
      "host after importing corral, no sandbox",
      fmtMiB(m.hostImportedRss),
      x(m.hostImportedRss / empty.hwm),
    ],
    [
      `**host with every built-in toolset started** (${m.sandboxes.join(", ")}), RSS`,
      fmtMiB(m.allStartedRss),
      x(m.allStartedRss / empty.hwm),
    ],
    ["same, peak (VmHWM)", fmtMiB(m.allStartedHwm), x(m.allStartedHwm / empty.hwm)],
    ["per extra worker sandbox (host RSS increment)", fmtMiB(m.perWorker), "–"],
    ["per extra process sandbox: host RSS increment", fmtMiB(m.perProcessHost), "–"],
    ["per extra process sandbox: the child's RSS", fmtMiB(m.perProcessChild), "–"],
  ];
  return [
    SECTIONS[5],
    "",
    "Read from `/proc/self/status` (VmRSS, VmHWM) after a garbage collection, and from " +
    '`/proc/<pid>/status` of each process sandbox (`Sandbox.pid`). "Started" means the sandbox ' +
    "is running and has imported its tool modules. The `net` toolset is granted one host so " +
    `that GetUrl loads. Increments are averaged over ${m.extra} extra no-op sandboxes of each ` +
    "kind. No goal is set for memory; the numbers are for capacity planning.",
    "",
    table(["measurement", "value", "vs empty process"], rows),
  ].join("\n");
}

async function sectionMcp(sizes: Sizes): Promise<string> {
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

// ---------------------------------------------------------------------------

function machine(): string[] {
  let cpu = "unknown CPU";
  let mem = NaN;
  try {
    cpu = /model name\s*:\s*(.+)/.exec(Deno.readTextFileSync("/proc/cpuinfo"))?.[1] ?? cpu;
    mem = Number(/MemTotal:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/meminfo"))?.[1]) * 1024;
  } catch { /* not Linux */ }
  return [
    `- Machine: ${cpu}, ${navigator.hardwareConcurrency} cores, ${fmtMiB(mem)} RAM, ` +
    `${Deno.build.os} ${Deno.osRelease()} (${Deno.build.arch})`,
    `- Deno ${Deno.version.deno} (V8 ${Deno.version.v8}, TypeScript ${Deno.version.typescript})`,
  ];
}

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
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_bench_" }));
  const started = new Date();
  const t0 = performance.now();
  const loadBefore = Deno.loadavg();
  log(`${smoke ? "smoke" : "full"} run; report: ${out}`);

  const parts: string[] = [];
  const attempt = async (name: string, heading: string, fn: () => Promise<string>) => {
    if (!want(name)) {
      parts.push(`${heading}\n\nSkipped in this run (\`--only ${values.only}\`).`);
      return;
    }
    try {
      parts.push(await fn());
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
    }
  };
  try {
    await attempt("1", `${SECTIONS[1]}\n\n${SECTIONS[2]}`, () => sectionCalls(sizes));
    await attempt("3", SECTIONS[3], () => sectionColdStart(sizes, base));
    await attempt("4", SECTIONS[4], () => sectionDiscovery(sizes, base));
    await attempt("5", SECTIONS[5], () => sectionMemory(sizes));
    await attempt("6", SECTIONS[6], () => sectionMcp(sizes));
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

  const passed = goals.filter((g) => g.pass === true).length;
  const report = [
    "# corral benchmarks",
    "",
    `Written by \`deno task bench${smoke ? " --smoke" : ""}\` (\`bench/run.ts\`); do not edit by ` +
    "hand: the prose under Analysis comes from `bench/analysis.md`. Every goal is a ratio to a " +
    "baseline measured in the same run, so the verdicts carry across machines; absolute times " +
    "do not.",
    "",
    ...machine(),
    `- Date: ${started.toISOString()}; run time ${sig(seconds)} s` +
    (smoke ? "; **smoke run: tiny counts, the numbers mean nothing**" : ""),
    `- Load average (1, 5, 15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(", ")}; ` +
    `after: ${loadAfter.map((l) => l.toFixed(2)).join(", ")}`,
    "",
    SECTIONS[0],
    "",
    `${passed} of ${goals.length} goals met.`,
    "",
    table(
      ["#", "goal", "corral", "baseline", "ratio", "target", "result"],
      goals.map((g) => [g.id, g.goal, g.corral, g.baseline, x(g.ratio), g.target, verdict(g.pass)]),
    ),
    "",
    ...parts.flatMap((p) => [p, ""]),
    SECTIONS[7],
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
