/**
 * The report of `deno task bench`: the sizes of a run, the section
 * headings, the goals table and the helpers that format it.
 *
 * @module
 */
import { fmtMiB, sig } from "./lib.ts";

/** Sizes of one run. */
export interface Sizes {
  calls: number;
  rounds: number;
  coldRuns: number;
  plugins: number[];
  discoveryColdRuns: (n: number) => number;
  discoveryWarmRuns: number;
  extraSandboxes: number;
  mcpCalls: number;
  /** Section 6: measured start-ups of each MCP server (spawn to the first answer). */
  mcpStarts: number;
  /** Section 5: live empty `deno run` processes measured for the memory baseline. */
  idleProcesses: number;
  /** Section 7: cold runs and warm calls per variant. */
  nsRuns: number;
  nsWarmCalls: number;
  /** Section 7: launches alone per way (fd binding, by name), and cold `corral call`s per tool. */
  nsLaunches: number;
  nsCliRuns: number;
  /** Section 8: concurrent HTTP clients, calls per client, repetitions per server. */
  httpClients: number;
  httpPerClient: number;
  httpReps: number;
  /** Section 10: MCP sessions opened besides the first (each its own sandbox). */
  sessions: number;
  /** Section 11: seconds of load, identities, sessions per identity, session idle seconds. */
  teamSeconds: number;
  teamIdentities: number;
  teamPerIdentity: number;
  teamIdle: number;
  /** Section 11: warm calls per variant for the identity overhead. */
  overheadCalls: number;
  /** Section 12: changed files of 4 KB settled, rounds; empty files settled (each measured alone). */
  settleChanged: number;
  settleRounds: number;
  settleEmpty: number[];
}

/** The full run: `deno task bench`. */
export const FULL: Sizes = {
  calls: 10_000,
  rounds: 5,
  coldRuns: 15,
  plugins: [0, 10, 100, 1000],
  discoveryColdRuns: (n) => n >= 1000 ? 1 : n >= 100 ? 2 : 3,
  discoveryWarmRuns: 7,
  extraSandboxes: 8,
  mcpCalls: 1000,
  mcpStarts: 5,
  idleProcesses: 7,
  nsRuns: 15,
  nsWarmCalls: 200,
  nsLaunches: 40,
  nsCliRuns: 15,
  httpClients: 50,
  httpPerClient: 40,
  httpReps: 3,
  sessions: 10,
  teamSeconds: 20,
  teamIdentities: 10,
  teamPerIdentity: 10,
  teamIdle: 45,
  overheadCalls: 1000,
  settleChanged: 1000,
  settleRounds: 5,
  settleEmpty: [10_000, 100_000],
};

/** The smoke run: tiny counts, seconds (`--smoke`). */
export const SMOKE: Sizes = {
  calls: 200,
  rounds: 2,
  coldRuns: 2,
  plugins: [0, 1, 2, 4],
  discoveryColdRuns: () => 1,
  discoveryWarmRuns: 2,
  extraSandboxes: 1,
  mcpCalls: 20,
  mcpStarts: 1,
  idleProcesses: 2,
  nsRuns: 2,
  nsWarmCalls: 10,
  nsLaunches: 2,
  nsCliRuns: 1,
  httpClients: 4,
  httpPerClient: 3,
  httpReps: 1,
  sessions: 2,
  teamSeconds: 2,
  teamIdentities: 2,
  teamPerIdentity: 2,
  teamIdle: 2,
  overheadCalls: 20,
  settleChanged: 50,
  settleRounds: 1,
  settleEmpty: [200, 2000],
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
  "## 7. The namespace's cost",
  "## 8. MCP over HTTP: calls per second",
  "## Analysis",
  "## 9. Hosted MCP servers: direct, srt, corral",
  "## 10. A sandbox per principal: what each session costs",
  "## 11. A team: many sessions from many identities",
  "## 12. Settling a call's changes",
] as const;

/** One row of the goals table. */
export interface Goal {
  id: string;
  goal: string;
  corral: string;
  baseline: string;
  ratio: number;
  target: string;
  pass: boolean | null;
  /** Set when its section ran under load (bench/load_watch.ts): the verdict is UNRELIABLE. */
  unreliable?: string;
}

/** The goals measured so far in this run, in order. */
export const goals: Goal[] = [];

/** Add a row to the goals table (`pass` absent: not judged). */
export function goal(g: Omit<Goal, "pass"> & { pass?: boolean | null }): void {
  goals.push({ ...g, pass: g.pass === undefined ? null : g.pass });
}

/**
 * PASS, MISS or n/a, as the table shows it; UNRELIABLE (with what it
 * measured) when its section ran under load.
 */
export function verdict(pass: boolean | null, unreliable?: string): string {
  const v = pass === null ? "n/a" : pass ? "PASS" : "MISS";
  return unreliable ? `UNRELIABLE (${v} under load)` : pass === null ? v : `**${v}**`;
}

/** A ratio as `1.23×`. */
export function x(ratio: number): string {
  return Number.isFinite(ratio) ? `${sig(ratio)}×` : "n/a";
}

/** A Markdown table. */
export function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

/** `min – max` of several runs. */
export function spread(values: number[], fmt: (v: number) => string): string {
  return values.length > 1
    ? `${fmt(Math.min(...values))} – ${fmt(Math.max(...values))}`
    : "(1 run)";
}

/** A progress line on stderr. */
export function log(text: string): void {
  console.error(`[bench] ${text}`);
}

/** The machine the run was on, for the report header. */
export function machine(): string[] {
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
