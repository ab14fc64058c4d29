/**
 * Section 4 of the benchmarks: discovery of 0 to 1000 plugin files, cold
 * and from the cache.
 *
 * @module
 */
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { ROOT } from "../testing/paths.ts";
import { fmtMs, median, timeDeno } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, spread, table, x } from "./report.ts";

/** Goal 4b: the cold cost of one more plugin, in ms (an absolute limit). */
export const PER_PLUGIN_LIMIT_MS = 10;
/** Goal 4d: a cold `corral list` with no plugins against a warm one. */
export const COLD_EMPTY_LIMIT = 3;

/** Run section 4 in `base`; returns its Markdown. */
export async function sectionDiscovery(sizes: Sizes, base: string): Promise<string> {
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
    goal: `discovery, warm \`corral list --json\` with ${top} plugins ≤ 1.5× with 0`,
    corral: fmtMs(warm[top]),
    baseline: fmtMs(warm[0]),
    ratio: warm[top] / warm[0],
    target: "≤ 1.5×",
    pass: warm[top] / warm[0] <= 1.5,
  });
  // Per plugin (cold) = (cold(N) − cold(0)) / N: what one more plugin adds.
  const perTop = (cold[top] - cold[0]) / top;
  const perMid = (cold[mid] - cold[0]) / mid;
  goal({
    id: "4b",
    goal: `discovery, cold cost per plugin at ${top} plugins ≤ ${fmtMs(PER_PLUGIN_LIMIT_MS)} ` +
      "(an absolute limit, not a ratio: the ratio column is corral ÷ the limit)",
    corral: `${fmtMs(perTop)}/plugin`,
    baseline: `limit ${fmtMs(PER_PLUGIN_LIMIT_MS)}/plugin`,
    ratio: perTop / PER_PLUGIN_LIMIT_MS,
    target: `≤ ${fmtMs(PER_PLUGIN_LIMIT_MS)}`,
    pass: perTop <= PER_PLUGIN_LIMIT_MS,
  });
  goal({
    id: "4c",
    goal: `discovery, cold cost flat: per-plugin cost at ${top} plugins ≤ 1.3× at ${mid}`,
    corral: `${fmtMs(perTop)}/plugin`,
    baseline: `${fmtMs(perMid)}/plugin`,
    ratio: perTop / perMid,
    target: "≤ 1.3×",
    pass: perTop / perMid <= 1.3,
  });
  goal({
    id: "4d",
    goal: `discovery, cold \`corral list --json\` with no plugins ≤ ${COLD_EMPTY_LIMIT}× warm ` +
      "(the first run with an empty cache: corral's own toolsets discovered)",
    corral: fmtMs(cold[0]),
    baseline: fmtMs(warm[0]),
    ratio: cold[0] / warm[0],
    target: `≤ ${COLD_EMPTY_LIMIT}×`,
    pass: cold[0] / warm[0] <= COLD_EMPTY_LIMIT,
  });
  return [
    SECTIONS[4],
    "",
    "`corral list --json` as a whole process, with `CORRAL_TOOL_DIRS` naming a directory of N " +
    "generated plugin files (one zod tool each; plugins use the shipped policy: process " +
    "isolation) and `CORRAL_CACHE_DIR` a discovery cache: **cold** = an empty cache (every " +
    "plugin imported in its sandbox), **warm** = the cache filled by the cold run. corral's " +
    "example plugins do not load (only `corral demo` loads them). Per plugin (cold) = " +
    "(cold(N) − cold(0)) / N: " +
    `goal 4b holds it under ${fmtMs(PER_PLUGIN_LIMIT_MS)} at the largest N (an absolute limit), ` +
    "goal 4c keeps it flat from the second-largest N to the largest; goal 4d holds a cold " +
    "start with no plugins near a warm one. Spread: fastest and slowest run.",
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
