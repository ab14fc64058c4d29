/**
 * How busy the machine was while one section of the bench ran, and whether
 * its figures can be trusted.
 *
 * The 1-minute load average (`Deno.loadavg`) is recorded before and after
 * each section, but it cannot say who loaded the machine: the bench's own
 * sections load it (a cold start uses a core, the team section two), and a
 * load average decays over minutes, so a section inherits the one before
 * it. So the verdict rests on what the other processes used: the bench runs
 * in a cgroup of its own (cgroup v1 `cpuacct`, where this machine has it),
 * and the CPU time the whole machine spent busy (`/proc/stat`) minus the
 * CPU time of the bench's cgroup (every process it started, sandboxes in
 * their namespaces included) is what others took.
 *
 * A section ran **under load** when others took more than
 * {@link OTHERS_LIMIT} of the machine's CPU time during it: a quarter of
 * the cores, the same bar as "a load under 0.5" on the two-core machines
 * the goals were set on (issue 41: a quiet machine has a load under 0.5 and
 * nothing else running). Where the cgroup cannot be made (no root, no
 * cgroup v1 `cpuacct`), the 1-minute load average before the section
 * decides instead, against {@link LOADAVG_LIMIT_PER_CORE} per core.
 *
 * @module
 */

/** Others' share of the machine's CPU time above which a section ran under load. */
export const OTHERS_LIMIT = 0.25;
/** Without the cgroup: the 1-minute load average per core above which a section ran under load. */
export const LOADAVG_LIMIT_PER_CORE = 0.5;

const _CPUACCT = "/sys/fs/cgroup/cpuacct";
const _CORES = (() => {
  try {
    return Math.max(1, navigator.hardwareConcurrency);
  } catch {
    return 1;
  }
})();

/** The load around one section. */
export interface SectionLoad {
  /** 1-, 5- and 15-minute load averages before and after. */
  before: number[];
  after: number[];
  /** Others' share of the machine's CPU time during it (0..1), or NaN where not measured. */
  others: number;
  /** The bench's own share of it (0..1), or NaN. */
  own: number;
  /** What decided: `cgroup` (others' CPU time) or `loadavg` (the fallback). */
  by: "cgroup" | "loadavg";
  /** Whether it ran under load: its figures are not to be trusted. */
  loaded: boolean;
}

let _group: string | undefined | null;

/**
 * Put the bench (and so everything it starts) in a cpuacct cgroup of its
 * own, once; its path, or undefined where that is not possible.
 */
function _benchGroup(): string | undefined {
  if (_group !== undefined) return _group ?? undefined;
  try {
    const dir = `${_CPUACCT}/corral-bench-${Deno.pid}`;
    Deno.mkdirSync(dir, { recursive: true });
    Deno.writeTextFileSync(`${dir}/cgroup.procs`, `${Deno.pid}\n`);
    _group = dir;
    globalThis.addEventListener("unload", () => {
      try {
        Deno.writeTextFileSync(`${_CPUACCT}/cgroup.procs`, `${Deno.pid}\n`);
        Deno.removeSync(dir);
      } catch { /* left for the next boot */ }
    });
  } catch {
    _group = null;
  }
  return _group ?? undefined;
}

/** The machine's busy and total CPU time (ns), and the bench cgroup's (ns). */
function _sample(group: string | undefined): { busy: number; total: number; own: number } {
  const line = Deno.readTextFileSync("/proc/stat").split("\n")[0];
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is inside user).
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
  const tick = 1e9 / 100; // USER_HZ is 100 on Linux
  const busy = (user + nice + system + irq + softirq + (steal ?? 0)) * tick;
  const total = busy + (idle + iowait) * tick;
  const own = group ? Number(Deno.readTextFileSync(`${group}/cpuacct.usage`).trim()) : NaN;
  return { busy, total, own };
}

/**
 * Start watching: call the returned function when the section is over.
 *
 * @example
 * ```ts ignore
 * const done = watchLoad();
 * await section();
 * const load = done(); // load.loaded: repeat it, or mark its goals UNRELIABLE
 * ```
 */
export function watchLoad(): () => SectionLoad {
  const before = Deno.loadavg();
  let group: string | undefined;
  let start: ReturnType<typeof _sample> | undefined;
  try {
    group = _benchGroup();
    start = _sample(group);
  } catch { /* no /proc: the load average alone */ }
  return () => {
    const after = Deno.loadavg();
    let others = NaN, own = NaN;
    try {
      const end = _sample(group);
      const total = end.total - start!.total;
      own = (end.own - start!.own) / total;
      others = Math.max(0, (end.busy - start!.busy) / total - own);
    } catch { /* not measured */ }
    const by = Number.isFinite(others) ? "cgroup" : "loadavg";
    return { before, after, others, own, by, loaded: underLoad(others, before[0], _CORES) };
  };
}

/**
 * Whether a section ran under load: others' share of the CPUs over
 * {@link OTHERS_LIMIT} where it was measured (NaN where not), else the
 * 1-minute load average before it over {@link LOADAVG_LIMIT_PER_CORE} per core.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { underLoad } from "./load_watch.ts";
 * assert.equal(underLoad(0.1, 9, 2), false); // the bench loaded the machine itself
 * assert.equal(underLoad(0.4, 0, 2), true);
 * assert.equal(underLoad(NaN, 0.8, 2), false);
 * assert.equal(underLoad(NaN, 1.2, 2), true);
 * ```
 */
export function underLoad(others: number, loadBefore: number, cores: number): boolean {
  if (Number.isFinite(others)) return others > OTHERS_LIMIT;
  return loadBefore / Math.max(1, cores) > LOADAVG_LIMIT_PER_CORE;
}

/**
 * One line of the report for a section's load.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeLoad } from "./load_watch.ts";
 * const busy = { before: [2, 2, 2], after: [3, 2, 2], others: 0.6, own: 0.3, by: "cgroup" as const, loaded: true };
 * assert.match(describeLoad(busy, true), /other processes used 60 %.*UNRELIABLE/);
 * assert.match(describeLoad({ ...busy, others: 0.1, loaded: false }, false), /quiet enough to trust/);
 * ```
 */
export function describeLoad(l: SectionLoad, repeated: boolean): string {
  const avg = (a: number[]) => a.map((x) => x.toFixed(2)).join(", ");
  const share = Number.isFinite(l.others)
    ? `; other processes used ${(l.others * 100).toFixed(0)} % of the CPUs during it ` +
      `(the bench ${(l.own * 100).toFixed(0)} %)`
    : "";
  const verdict = !l.loaded
    ? "quiet enough to trust"
    : `**under load** (${
      l.by === "cgroup"
        ? `others over ${OTHERS_LIMIT * 100} %`
        : `1-minute load over ${LOADAVG_LIMIT_PER_CORE} per core`
    })${repeated ? " again after one repeat" : ""}: its goals are UNRELIABLE`;
  return `Load: 1-, 5-, 15-minute load average ${avg(l.before)} before, ${avg(l.after)} after` +
    `${share}: ${verdict}.`;
}
