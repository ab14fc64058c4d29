/**
 * Section 12 of the benchmarks: settling a call's changes (issue 37).
 * What a sandbox's layer holds is applied to the tree by corral's own
 * settlement (read, judged, applied by replacement through the applier,
 * flushed), timed against `cp -a` of the same files in the same run, and
 * the host's memory is measured while 10,000 and 100,000 files are
 * settled (`bench/settle.ts`, one child process per measurement).
 *
 * @module
 */
import { join } from "node:path";
import { HOST_V8_FLAGS } from "../core/sandbox/mod.ts";
import { fmtMiB, fmtMs, runChild } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";

interface _Changed {
  files: number;
  corral: number[];
  cp: number[];
  corralMs: number;
  cpMs: number;
  floor: number[];
  floorMs: number;
}

interface _Empty {
  files: number;
  ms: number;
  cpMs: number;
  rssGrowth: number;
  peakGrowth: number;
  peakHeap: number;
  maxLagMs: number;
}

/** 12c's bound: 50 MB (decimal, as the issue says; 47.7 MiB). */
const _MB50 = 50e6;

/** Run section 12; returns its Markdown. */
export async function sectionSettle(sizes: Sizes, base: string): Promise<string> {
  const layers = join(base, "settle-layers");
  await Deno.mkdir(layers, { recursive: true });
  const child = <T>(args: string[]) =>
    runChild<T>("settle.ts", args, {
      // The host's own V8 flags: the settlement runs in the host.
      flags: ["--v8-flags=--expose-gc", ...HOST_V8_FLAGS],
      env: { CORRAL_LAYERS_DIR: layers },
    });
  log(
    `12. settle: ${sizes.settleChanged} changed files of 4 KB, ${sizes.settleRounds} rounds; ` +
      `${sizes.settleEmpty.join(" and ")} empty files`,
  );
  const changed = await child<_Changed>([
    "changed",
    String(sizes.settleChanged),
    String(sizes.settleRounds),
  ]);
  const empty: _Empty[] = [];
  for (const n of sizes.settleEmpty) empty.push(await child<_Empty>(["empty", String(n)]));
  const big = empty.at(-1)!;
  const a = changed.corralMs / changed.cpMs, b = big.ms / big.cpMs;
  const growth = Math.max(...empty.map((e) => e.peakGrowth));
  goal({
    id: "12a",
    goal: `applying ${changed.files} changed files of 4 KB ≤ 2× \`cp -a\` of the same files`,
    corral: fmtMs(changed.corralMs),
    baseline: fmtMs(changed.cpMs),
    ratio: a,
    target: "≤ 2×",
    pass: a <= 2,
  });
  goal({
    id: "12b",
    goal: `settling ${big.files} empty files ≤ 3× \`cp -a\` of them`,
    corral: fmtMs(big.ms),
    baseline: fmtMs(big.cpMs),
    ratio: b,
    target: "≤ 3×",
    pass: b <= 3,
  });
  goal({
    id: "12c",
    goal: `the host's peak RSS growth while settling ${sizes.settleEmpty.join(" and ")} files ` +
      "≤ 50 MB",
    corral: `${(growth / 1e6).toFixed(1)} MB`,
    baseline: "50 MB",
    ratio: growth / _MB50,
    target: "≤ 1×",
    pass: growth <= _MB50,
  });
  return [
    SECTIONS[13],
    "",
    "A sandbox's write layer settled by corral's own code (`core/layers/`: the layer read by " +
    "`find`, each change judged, applied by replacement through the applier in its namespace, " +
    "flushed with `syncfs`), in the measuring process, whose applier is already running (a " +
    "session's first call starts it). Side by side, `cp -a` of the same files: for changed " +
    "files, over a copy of the same tree; for new files, into a fresh folder (`bench/settle.ts`). " +
    "`cp -a` over existing files rewrites them in place; a replacement makes a new file per " +
    "path, which the least replacement a program can do, measured in the same rounds, shows " +
    `(corral is ${x(changed.corralMs / changed.floorMs)} of it here).`,
    "",
    table(["measurement", "corral", "cp -a", "ratio", "spread (corral)", "spread (cp -a)"], [
      [
        `${changed.files} changed files of 4 KB (median of ${changed.corral.length})`,
        fmtMs(changed.corralMs),
        fmtMs(changed.cpMs),
        x(a),
        spread(changed.corral, fmtMs),
        spread(changed.cp, fmtMs),
      ],
      [
        `the same, replaced by the least a program can do (copied beside, one \`syncfs\`, ` +
        `renamed; no check)`,
        fmtMs(changed.floorMs),
        fmtMs(changed.cpMs),
        x(changed.floorMs / changed.cpMs),
        spread(changed.floor, fmtMs),
        spread(changed.cp, fmtMs),
      ],
      ...empty.map((e) => [
        `${e.files} empty files in one folder`,
        fmtMs(e.ms),
        fmtMs(e.cpMs),
        x(e.ms / e.cpMs),
        "(1 run)",
        "(1 run)",
      ]),
    ]),
    "",
    "The host while it settles the empty files: its RSS growth at its peak (VmHWM, reset " +
    "before) and after the settlement and a garbage collection, the V8 heap at its largest, and " +
    "the longest its event loop went unanswered (a 10 ms timer's delay).",
    "",
    table(
      ["files", "peak RSS growth", "RSS growth after", "V8 heap at its largest", "longest stall"],
      empty.map((e) => [
        String(e.files),
        fmtMiB(e.peakGrowth),
        fmtMiB(e.rssGrowth),
        fmtMiB(e.peakHeap),
        fmtMs(e.maxLagMs),
      ]),
    ),
  ].join("\n");
}
