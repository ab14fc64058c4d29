/**
 * Section 5 of the benchmark, in one fresh process: resident memory of a
 * corral host with every built-in toolset started (every sandbox running,
 * its modules imported), and the increment per extra worker sandbox and per
 * extra process sandbox. Reads `/proc/self/status` (VmHWM, VmRSS) and
 * the RSS of process sandboxes (`Sandbox.pid`, with every process below
 * it: `treeRss`, as corral's own `corral stats`). Prints one JSON
 * object. Run with `--v8-flags=--expose-gc` so readings follow a collection.
 *
 *     deno run -A --v8-flags=--expose-gc bench/memory.ts EXTRA
 *
 * @module
 */
import { builtinToolsets, Registry } from "../core/registry/mod.ts";
import { parsePolicy } from "../core/config/mod.ts";
import { Reporter } from "../core/tool/mod.ts";
import { Sandbox } from "../core/sandbox/mod.ts";
import { ROOT } from "../testing/paths.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { BENCH, collectGarbage, procStatus, sleep, treeRss } from "./lib.ts";

/** What this script prints (bytes). */
export interface MemoryResult {
  /** After importing corral, before any sandbox. */
  hostImportedRss: number;
  /** With every built-in toolset's sandboxes started. */
  allStartedRss: number;
  allStartedHwm: number;
  sandboxes: string[];
  extra: number;
  perWorker: number;
  perProcessHost: number;
  /** Mean RSS of one process sandbox (its whole process tree), while running. */
  perProcessChild: number;
  /** The RSS of each extra process sandbox, as `perProcessChild` averages. */
  childRss: number[];
}

const NOOP = `${BENCH}noop_tools.ts`;

async function settle(): Promise<void> {
  await sleep(200);
  collectGarbage();
  await sleep(50);
}

async function main(): Promise<void> {
  const extra = Number(Deno.args[0] ?? 8);
  const workspace = await tempDir("corral_bench_mem_");
  await settle();
  const hostImportedRss = procStatus("VmRSS");

  // Every built-in toolset (autoloaded and on demand), every sandbox started.
  // The shipped policy lists no hosts for `net`; grant one so GetUrl loads too.
  const shipped = JSON.parse(await Deno.readTextFile(`${ROOT}permissions.json`));
  shipped.toolsets.net.net = ["example.com"];
  const registry = await Registry.create({
    workspace,
    policy: parsePolicy(JSON.stringify(shipped), "permissions.json", workspace),
    toolsets: Object.keys(await builtinToolsets()),
    cacheDir: null,
    reporter: new Reporter({ quiet: true }),
  });
  const started = new Map<Sandbox, string>();
  for (const tool of registry.loaded()) {
    const sb = await registry.sandboxFor(tool.name);
    if (started.has(sb)) continue;
    started.set(sb, sb.options.label);
    const env = { workspace, grant: sb.options.grant };
    const [metas] = await sb.load([{ modules: sb.options.modules, env, timeoutMs: 60_000 }]);
    const bad = metas.find((m) => m.error);
    if (bad) throw new Error(`${sb.options.label}: ${bad.error}`);
  }
  await settle();
  const allStartedRss = procStatus("VmRSS");
  const allStartedHwm = procStatus("VmHWM");

  // Extra sandboxes of the no-op module.
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { w: { isolation: "worker" }, p: { isolation: "process" } },
    }),
    "bench-permissions.json",
    workspace,
  );
  const grant = { read: [], write: [], run: [], net: [] };
  const startMany = async (kind: "w" | "p") => {
    const list: Sandbox[] = [];
    for (let i = 0; i < extra; i++) {
      const sb = new Sandbox({
        label: `${kind}${i}`,
        grant,
        modules: [NOOP],
        policy: policy.toolset(kind),
        workspace,
      });
      await sb.prepare();
      const [[meta]] = await sb.load([{
        modules: [NOOP],
        env: { workspace, grant },
        timeoutMs: 60_000,
      }]);
      if (meta.error) throw new Error(meta.error);
      list.push(sb);
    }
    return list;
  };

  const beforeWorkers = procStatus("VmRSS");
  const workers = await startMany("w");
  await settle();
  const perWorker = (procStatus("VmRSS") - beforeWorkers) / extra;
  for (const sb of workers) await sb.close();
  await settle();

  const beforeProcesses = procStatus("VmRSS");
  const processes = await startMany("p");
  await settle();
  const perProcessHost = (procStatus("VmRSS") - beforeProcesses) / extra;
  const childRss = await Promise.all(processes.map((sb) => treeRss(sb.pid!)));
  const perProcessChild = childRss.reduce((a, b) => a + b, 0) / extra;
  for (const sb of processes) await sb.close();
  await registry.close();

  const result: MemoryResult = {
    hostImportedRss,
    allStartedRss,
    allStartedHwm,
    sandboxes: [...started.values()],
    extra,
    perWorker,
    perProcessHost,
    perProcessChild,
    childRss,
  };
  console.log(JSON.stringify(result));
}

if (import.meta.main) {
  await main();
  Deno.exit(0);
}
