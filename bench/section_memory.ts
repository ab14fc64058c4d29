/**
 * Section 5 of the benchmarks: memory per sandbox, and goal 5: a process
 * sandbox's RSS against a live empty `deno run` process, both read the same
 * way while they run.
 *
 * @module
 */
import type { MemoryResult } from "./memory.ts";
import { BENCH, fmtMiB, median, runChild, sleep, treeRss } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";

/** Run section 5; returns its Markdown. */
export async function sectionMemory(sizes: Sizes): Promise<string> {
  log(
    `5. memory: built-in toolsets, ${sizes.extraSandboxes} extra sandboxes of each kind, ` +
      `${sizes.idleProcesses} live empty processes`,
  );
  const empty = await runChild<{ rss: number; hwm: number }>("rss.ts", []);
  const idle: number[] = [];
  for (let i = 0; i < sizes.idleProcesses; i++) idle.push(await idleRss());
  const m = await runChild<MemoryResult>("memory.ts", [String(sizes.extraSandboxes)], {
    flags: ["--v8-flags=--expose-gc"],
  });
  const live = median(idle);
  const child = median(m.childRss);
  const rows = [
    [
      "**empty `deno run` process, running** (baseline: RSS while it waits on stdin)",
      fmtMiB(live),
      spread(idle, fmtMiB),
      "1×",
    ],
    [
      "empty `deno run` process, peak at exit (VmHWM)",
      fmtMiB(empty.hwm),
      "(1 run)",
      x(empty.hwm / live),
    ],
    [
      "host after importing corral, no sandbox",
      fmtMiB(m.hostImportedRss),
      "(1 run)",
      x(m.hostImportedRss / live),
    ],
    [
      `host with every built-in toolset started (${m.sandboxes.join(", ")}), RSS`,
      fmtMiB(m.allStartedRss),
      "(1 run)",
      x(m.allStartedRss / live),
    ],
    ["same, peak (VmHWM)", fmtMiB(m.allStartedHwm), "(1 run)", x(m.allStartedHwm / live)],
    ["per extra worker sandbox (host RSS increment)", fmtMiB(m.perWorker), "(mean)", "–"],
    ["per extra process sandbox: host RSS increment", fmtMiB(m.perProcessHost), "(mean)", "–"],
    [
      "**per process sandbox: the child's RSS** (median)",
      fmtMiB(child),
      spread(m.childRss, fmtMiB),
      x(child / live),
    ],
  ];
  goal({
    id: "5",
    goal: "memory, per process sandbox: the child's RSS ≤ 1.3× a running empty `deno run` process",
    corral: fmtMiB(child),
    baseline: fmtMiB(live),
    ratio: child / live,
    target: "≤ 1.3×",
    pass: child / live <= 1.3,
  });
  return [
    SECTIONS[5],
    "",
    "Read from `/proc/self/status` (VmRSS, VmHWM) after a garbage collection, and from " +
    "`/proc/<pid>/smaps_rollup` (Rss) of each process sandbox (`Sandbox.pid` and every process " +
    "below it, read as `corral stats` reads them: core/base/process_memory.ts). " +
    '"Started" means the sandbox is running and has imported its tool modules. The `net` ' +
    "toolset is granted one host so that GetUrl loads. Increments are averaged over " +
    `${m.extra} extra no-op sandboxes of each kind. The baseline of goal 5 is read the same ` +
    `way as a sandbox's: ${idle.length} \`deno run\` processes of a script that imports ` +
    "nothing (`bench/idle.ts`), each read from `/proc/<pid>/smaps_rollup` while it waits on stdin, " +
    "after it said it was up; the median is the baseline. The peak of an exiting empty " +
    "process (VmHWM) is shown for information. Spread: lowest and highest reading.",
    "",
    table(["measurement", "value", "spread", "vs running empty process"], rows),
  ].join("\n");
}

/**
 * RSS of a running `deno run bench/idle.ts` (bytes): started, read from
 * `/proc/<pid>/status` once it is up and has settled, then ended.
 */
export async function idleRss(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", `${BENCH}idle.ts`],
    env: { NO_COLOR: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  try {
    const first = await reader.read();
    if (first.done) throw new Error("bench/idle.ts ended before it was up");
    // Settle as memory.ts does before it reads a sandbox.
    await sleep(250);
    const rss = await treeRss(child.pid);
    if (!Number.isFinite(rss)) throw new Error(`cannot read /proc/${child.pid}/smaps_rollup`);
    return rss;
  } finally {
    reader.releaseLock();
    await child.stdin.close().catch(() => {});
    await child.stdout.cancel().catch(() => {});
    await child.status;
  }
}
