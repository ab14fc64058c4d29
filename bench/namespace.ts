/**
 * What the sandbox namespace costs (section 7): the same files toolset, in
 * process isolation, with the namespace (`"jail": "required"`, the shipped
 * default) and without it (`"jail": "off"`). Run as a child of bench/run.ts:
 *
 *     deno run -A bench/namespace.ts RUNS WARM_CALLS
 *
 * For each variant and run: a fresh registry (discovery served from a warm
 * cache), then the first call of WordCount, which starts the sandbox (the
 * cold call), then WARM_CALLS more (warm calls). Prints one JSON line.
 *
 * @module
 */
import { parsePolicy } from "../core/config/policy.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { median } from "./lib.ts";

const [runs, warmCalls] = Deno.args.map(Number);
const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_bench_ns_" }));
const cache = await Deno.makeTempDir({ prefix: "corral_bench_ns_cache_" });
await Deno.writeTextFile(`${ws}/a.txt`, "one two three\n".repeat(10));

async function variant(jail: "required" | "off") {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { files: { read: ["."], write: ["."], jail } } }),
    "bench.json",
    ws,
  );
  const cold: number[] = [];
  const warm: number[] = [];
  for (let r = 0; r < runs + 1; r++) {
    const registry = await Registry.create({
      workspace: ws,
      policy,
      privileges: "rw",
      cacheDir: cache,
      reporter: new Reporter({ sink: () => {}, color: false }),
    });
    try {
      let t = performance.now();
      const first = await registry.call("WordCount", { filepath: "a.txt" });
      if (!first.success) throw new Error(`WordCount failed: ${first.error}`);
      if (r > 0) cold.push(performance.now() - t); // run 0 warms the caches
      for (let i = 0; i < warmCalls; i++) {
        t = performance.now();
        await registry.call("WordCount", { filepath: "a.txt" });
        if (r > 0) warm.push(performance.now() - t);
      }
    } finally {
      await registry.close();
    }
  }
  const coldMs = median(cold);
  const warmMs = median(warm);
  return { coldMs, warmMs, startMs: coldMs - warmMs, runs: cold.length, calls: warm.length };
}

// Alternate the variants so that machine noise falls on both.
const withNs = await variant("required");
const without = await variant("off");
await Deno.remove(ws, { recursive: true });
await Deno.remove(cache, { recursive: true });
console.log(JSON.stringify({ withNs, without }));
