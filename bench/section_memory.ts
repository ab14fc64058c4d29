/**
 * Section 5 of the benchmarks: memory per sandbox.
 *
 * @module
 */
import type { MemoryResult } from "./memory.ts";
import { fmtMiB, runChild } from "./lib.ts";
import { log, SECTIONS, type Sizes, table, x } from "./report.ts";

/** Run section 5; returns its Markdown. */
export async function sectionMemory(sizes: Sizes): Promise<string> {
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
