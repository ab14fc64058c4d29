/**
 * Child of section 12 (`bench/section_settle.ts`): one settlement of a
 * write layer, timed against `cp -a` of the same files, side by side. The
 * layer is made as a sandbox's overlay leaves it (its upper folder holds
 * what the tool wrote), then settled by corral's own code
 * (core/layers/settle_layers.ts: read, judge, apply through the applier in
 * its namespace), in this process, whose memory is measured.
 *
 *     deno run -A --v8-flags=--expose-gc,--heap-growing-percent=50,--max-semi-space-size=4 bench/settle.ts changed FILES ROUNDS
 *     deno run -A --v8-flags=--expose-gc,--heap-growing-percent=50,--max-semi-space-size=4 bench/settle.ts empty FILES
 *
 * `changed`: the tree holds FILES files of 4 KB; the layer rewrites each;
 * `cp -a` copies the layer's files over a copy of the same tree. `empty`:
 * the layer holds FILES new empty files in one folder; `cp -a` copies
 * that folder. Prints one JSON line.
 *
 * @module
 */
import { join } from "node:path";
import { layerQuota, startLayers } from "../core/layers/mod.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { collectGarbage, median, procStatus } from "./lib.ts";

async function _sh(script: string, ...args: string[]): Promise<number> {
  const t0 = performance.now();
  const out = await new Deno.Command("/bin/bash", { args: ["-c", script, "bench", ...args] })
    .output();
  if (!out.success) throw new Error(`${script}: ${new TextDecoder().decode(out.stderr)}`);
  return performance.now() - t0;
}

/** A workspace and its layer, as a sandbox would leave them; its applier started (a first call's). */
async function _layer(base: string) {
  const ws = join(base, "ws");
  await Deno.mkdir(ws);
  const started = startLayers(
    [ws],
    ws,
    undefined,
    { trust: [] },
    layerQuota({
      layer_max_entries: 10_000_000,
      layer_max_bytes: 2 ** 50,
    }),
  )!;
  const layers = started.open([]);
  const upper = join(started.dirs.roots[0].dir, "u");
  await Deno.writeTextFile(join(upper, ".warm"), "");
  await layers.settle();
  return {
    ws,
    upper,
    layers,
    async close() {
      layers.retire();
      await started.remove();
    },
  };
}

/**
 * The least a replacement can do, as a floor to read 12a against: each new
 * file copied beside its path (a private folder), one `syncfs`, each renamed
 * over its path; Deno's synchronous calls, no check, no judge.
 */
function _floor(from: string, tree: string, files: number): number {
  const t0 = performance.now();
  const tmp = join(tree, ".~floor");
  Deno.mkdirSync(tmp, { mode: 0o700 });
  for (let i = 1; i <= files; i++) Deno.copyFileSync(join(from, `f${i}`), join(tmp, `f${i}`));
  new Deno.Command("sync", { args: ["-f", tree] }).outputSync();
  for (let i = 1; i <= files; i++) Deno.renameSync(join(tmp, `f${i}`), join(tree, `f${i}`));
  Deno.removeSync(tmp);
  return performance.now() - t0;
}

/** FILES files of 4 KB rewritten, ROUNDS times: corral's settlement, cp -a and the floor, in turn. */
async function _changed(files: number, rounds: number) {
  const corral: number[] = [], cp: number[] = [], floor: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const base = await tempDir("corral_bench_settle_");
    const l = await _layer(base);
    const make = 'mkdir -p "$1" && cd "$1" && for i in $(seq 1 "$2"); do ' +
      'head -c 4096 /dev/zero | tr "\\0" "$3" > f$i; done';
    await _sh(make, join(l.ws, "d"), String(files), "o");
    await _sh(make, join(base, "copy", "d"), String(files), "o");
    await _sh(make, join(base, "floor", "d"), String(files), "o");
    await _sh(make, join(l.upper, "d"), String(files), "n");
    await _sh("sync");
    const cpRun = () => _sh('cp -a "$1"/. "$2"', join(l.upper, "d"), join(base, "copy", "d"));
    const settle = async () => {
      const t0 = performance.now();
      const report = await l.layers.settle();
      if (report.changed !== files) throw new Error(`settled ${JSON.stringify(report)}`);
      return performance.now() - t0;
    };
    const floorRun = () =>
      Promise.resolve(_floor(join(l.upper, "d"), join(base, "floor", "d"), files));
    // Each timed step starts with nothing of another's left to flush: corral's settlement
    // ends with a syncfs of the file system, which would write out cp's files too. The
    // order turns round by round.
    const steps = [
      async () => corral.push(await settle()),
      async () => cp.push(await cpRun()),
      async () => floor.push(await floorRun()),
    ];
    for (let k = 0; k < steps.length; k++) {
      await steps[(r + k) % steps.length]();
      await _sh("sync");
    }
    await l.close();
    await Deno.remove(base, { recursive: true });
  }
  return {
    files,
    corral,
    cp,
    floor,
    corralMs: median(corral),
    cpMs: median(cp),
    floorMs: median(floor),
  };
}

/** FILES new empty files in one folder: the settlement, its memory and lag, and cp -a. */
async function _empty(files: number) {
  const base = await tempDir("corral_bench_settle_");
  const l = await _layer(base);
  await _sh(
    'mkdir "$1" && cd "$1" && seq 1 "$2" | sed "s/^/f/" | xargs touch',
    join(l.upper, "many"),
    String(files),
  );
  await _sh("sync");
  const cpMs = await _sh('cp -a "$1" "$2"', join(l.upper, "many"), join(base, "copy"));
  collectGarbage();
  const rss0 = procStatus("VmRSS");
  try {
    Deno.writeTextFileSync("/proc/self/clear_refs", "5"); // VmHWM starts again from VmRSS
  } catch { /* then the peak is the process's own */ }
  let maxLag = 0, last = performance.now(), peakHeap = 0, n = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxLag = Math.max(maxLag, now - last - 10);
    last = now;
    if (n++ % 10 === 0) peakHeap = Math.max(peakHeap, Deno.memoryUsage().heapTotal);
  }, 10);
  const t0 = performance.now();
  const report = await l.layers.settle();
  const ms = performance.now() - t0;
  clearInterval(tick);
  if (report.created !== files + 1) throw new Error(`settled ${JSON.stringify(report)}`);
  const peak = procStatus("VmHWM");
  collectGarbage();
  const rss1 = procStatus("VmRSS");
  await l.close();
  await new Deno.Command("rm", { args: ["-rf", base] }).output();
  const mu = Deno.memoryUsage();
  return {
    files,
    ms,
    cpMs,
    rssGrowth: rss1 - rss0,
    peakGrowth: peak - rss0,
    maxLagMs: maxLag,
    peakHeap,
    heapUsed: mu.heapUsed,
    heapTotal: mu.heapTotal,
  };
}

if (import.meta.main) {
  const [mode, files, rounds] = Deno.args;
  const out = mode === "changed"
    ? await _changed(Number(files), Number(rounds ?? 1))
    : await _empty(Number(files));
  console.log(JSON.stringify(out));
}
