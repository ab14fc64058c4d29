/**
 * Helpers of the benchmark scripts alone: statistics, whole-process timing,
 * and reading memory from `/proc`. What they share with the tests (the
 * project root, corral's flags, `corral mcp --http` started, temp folders,
 * real services) is in testing/mod.ts.
 *
 * @module
 */
import { processTreeMemory } from "../core/base/mod.ts";
import { ROOT } from "../testing/paths.ts";

/** This folder (absolute, with a trailing slash). */
export const BENCH: string = new URL(".", import.meta.url).pathname;

/** The `q`-quantile (0..1) of `values` (nearest rank on a sorted copy). */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/**
 * Calls made on each server before the measured calls of sections 6 and 9,
 * the same number for every way: the measured p50 is the steady state, and
 * the warm-up's own p50 is reported beside it (JIT tiering of a Deno or node
 * process takes a few hundred calls on this machine; start-up is timed apart).
 */
export const WARMUP_CALLS = 500;

/** Make `n` calls of `call`, timed: the warm-up's p50 (NaN for none). */
export async function warmUp(call: () => Promise<unknown>, n: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return quantile(times, 0.5);
}

/** The median of `values`. */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Summary of a sample: median, spread (min–max), and tail quantiles. */
export interface Summary {
  n: number;
  median: number;
  min: number;
  max: number;
  p25: number;
  p75: number;
  p99: number;
}

/** Summarise `values`. */
export function summary(values: number[]): Summary {
  return {
    n: values.length,
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    p25: quantile(values, 0.25),
    p75: quantile(values, 0.75),
    p99: quantile(values, 0.99),
  };
}

/** A time in ms, with a unit that keeps 3 significant figures (`87.2 µs`, `14.1 ms`, `2.35 s`). */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return "n/a";
  if (ms < 1) return `${sig(ms * 1000)} µs`;
  if (ms < 1000) return `${sig(ms)} ms`;
  return `${sig(ms / 1000)} s`;
}

/** A byte count in MiB. */
export function fmtMiB(bytes: number): string {
  return Number.isFinite(bytes) ? `${sig(bytes / 1048576)} MiB` : "n/a";
}

/** A rate per second. */
export function fmtRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return "n/a";
  return perSecond >= 1000 ? `${sig(perSecond / 1000)}k/s` : `${sig(perSecond)}/s`;
}

/** `x` with 3 significant figures. */
export function sig(x: number): string {
  if (!Number.isFinite(x)) return "n/a";
  if (x === 0) return "0";
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x))));
  return x.toFixed(Math.min(digits, 3));
}

/** Result of one timed process. */
export interface ProcessRun {
  ms: number;
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `deno ARGS` to completion and time it from spawn to exit (wall clock). */
export async function timeDeno(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; exec?: string } = {},
): Promise<ProcessRun> {
  const cmd = new Deno.Command(options.exec ?? Deno.execPath(), {
    args,
    cwd: options.cwd ?? ROOT,
    env: { NO_COLOR: "1", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
  const t0 = performance.now();
  const out = await cmd.output();
  const ms = performance.now() - t0;
  const dec = new TextDecoder();
  return { ms, code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Run a benchmark child script (`deno run -A bench/NAME args`) and parse its JSON stdout. */
export async function runChild<T>(
  script: string,
  args: string[],
  options: { flags?: string[]; env?: Record<string, string> } = {},
): Promise<T> {
  const res = await timeDeno(
    ["run", "-A", ...(options.flags ?? []), `${BENCH}${script}`, ...args],
    { env: options.env },
  );
  if (res.code !== 0) {
    throw new Error(`bench/${script} exited with ${res.code}: ${res.stderr.trim().slice(-2000)}`);
  }
  const line = res.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(`bench/${script} printed no JSON result: ${res.stdout.slice(-500)}`);
  }
}

/** A field of `/proc/<pid>/status` in bytes (`VmRSS`, `VmHWM`), or NaN where unreadable. */
export function procStatus(field: "VmRSS" | "VmHWM", pid: number | "self" = "self"): number {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/status`);
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * Resident memory of a process and every process below it, in bytes, as
 * corral reads a sandbox's (core/base/process_memory.ts: `Rss` of
 * `smaps_rollup` over the tree), so that a sandbox started through a
 * wrapper counts whole. NaN where the process is unreadable.
 */
export async function treeRss(pid: number): Promise<number> {
  return (await processTreeMemory([pid])).get(pid)?.rss ?? NaN;
}

/** Run V8's garbage collector when `--v8-flags=--expose-gc` is on. */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
}

/** Wait `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Each process's children, by parent pid: one snapshot of `/proc`. */
export function processChildren(): Map<number, number[]> {
  const kids = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const st = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(e.name)]);
    } catch { /* gone */ }
  }
  return kids;
}

/**
 * Memory of `root` and every process below it, in MiB: RSS (shared pages
 * counted once per process) and PSS (shared pages divided among their
 * users), from `smaps_rollup`; and how many processes there are.
 */
export function treeMemory(root: number): { rss: number; pss: number; processes: number } {
  const kids = processChildren();
  const pids: number[] = [];
  const walk = (p: number) => {
    pids.push(p);
    for (const k of kids.get(p) ?? []) walk(k);
  };
  walk(root);
  let rss = 0, pss = 0;
  for (const p of pids) {
    try {
      const t = Deno.readTextFileSync(`/proc/${p}/smaps_rollup`);
      rss += Number(/^Rss:\s+(\d+)/m.exec(t)?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+)/m.exec(t)?.[1] ?? 0);
    } catch { /* gone */ }
  }
  return { rss: rss / 1024, pss: pss / 1024, processes: pids.length };
}
