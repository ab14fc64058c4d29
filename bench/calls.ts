/**
 * Sections 1 and 2 of the benchmark, in one fresh process: warm call
 * latency (sequential) and throughput (concurrent) of a no-op tool in
 * corral's worker and process sandboxes, beside the baselines measured in
 * the same process: a direct function call, a bare Web Worker echo and a
 * bare child-process stdio echo. Prints one JSON object.
 *
 *     deno run -A bench/calls.ts CALLS ROUNDS
 *
 * @module
 */
import { collectTools, invokeTool, Reporter, testContext } from "../core/tool/mod.ts";
import { parsePolicy } from "../core/config/mod.ts";
import { Registry } from "../core/registry/mod.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { BENCH, quantile } from "./lib.ts";
import * as noopModule from "./noop_tools.ts";

const NOOP = `${BENCH}noop_tools.ts`;

/** One variant's sequential latencies. */
export interface LatencyResult {
  p50: number;
  p99: number;
  mean: number;
  /** Median of each round, to show run-to-run spread. */
  roundMedians: number[];
  n: number;
}

/** What this script prints. */
export interface CallsResult {
  calls: number;
  rounds: number;
  latency: Record<string, LatencyResult>;
  /** Messages (or calls) per second, one entry per repetition. */
  throughput: Record<string, number[]>;
}

type Variant = () => Promise<unknown> | unknown;

/** A bare echo worker: `call(msg)` resolves with the echo. */
function bareWorker() {
  const worker = new Worker(new URL("./echo_worker.ts", import.meta.url), { type: "module" });
  let waiting: ((v: unknown) => void) | undefined;
  let burst: { left: number; done: () => void } | undefined;
  worker.onmessage = (e) => {
    if (burst) {
      if (--burst.left === 0) burst.done();
      return;
    }
    const w = waiting;
    waiting = undefined;
    w?.(e.data);
  };
  return {
    call: (msg: unknown) =>
      new Promise((resolve) => {
        waiting = resolve;
        worker.postMessage(msg);
      }),
    /** Post `n` messages at once and wait for all echoes. */
    pipelined: (make: (i: number) => unknown, n: number) =>
      new Promise<void>((done) => {
        burst = {
          left: n,
          done: () => {
            burst = undefined;
            done();
          },
        };
        for (let i = 0; i < n; i++) worker.postMessage(make(i));
      }),
    close: () => worker.terminate(),
  };
}

/** A bare echo child process over stdio, one JSON line per message. */
function bareChild() {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", `${BENCH}echo_child.ts`],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  const queue: Array<(v: unknown) => void> = [];
  let burst: { left: number; done: () => void } | undefined;
  (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of child.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const value = JSON.parse(line);
        if (burst) {
          if (--burst.left === 0) burst.done();
        } else queue.shift()?.(value);
      }
    }
  })();
  return {
    call: (msg: unknown) =>
      new Promise((resolve) => {
        queue.push(resolve);
        writer.write(enc.encode(JSON.stringify(msg) + "\n"));
      }),
    pipelined: (make: (i: number) => unknown, n: number) =>
      new Promise<void>((done) => {
        burst = {
          left: n,
          done: () => {
            burst = undefined;
            done();
          },
        };
        const lines: string[] = [];
        for (let i = 0; i < n; i++) lines.push(JSON.stringify(make(i)));
        writer.write(enc.encode(lines.join("\n") + "\n"));
      }),
    close: async () => {
      await writer.close().catch(() => {});
      await child.status;
    },
  };
}

async function corralRegistry(
  isolation: "worker" | "process",
  workspace: string,
  grant: Record<string, string[]> = {},
) {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { bench: { isolation, ...grant } } }),
    "bench-permissions.json",
    workspace,
  );
  return await Registry.create({
    workspace,
    policy,
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ quiet: true }),
    sources: [{
      id: "bench",
      kind: "builtin",
      modules: [NOOP],
      policy: policy.toolset("bench"),
    }],
  });
}

async function sequential(fn: Variant, n: number): Promise<number[]> {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out[i] = performance.now() - t0;
  }
  return out;
}

async function main(): Promise<void> {
  const calls = Number(Deno.args[0] ?? 10_000);
  const rounds = Number(Deno.args[1] ?? 5);
  const workspace = await tempDir("corral_bench_calls_");
  const grant = { read: [], write: [], run: [], net: [] };
  // The bare baselines carry the same message corral sends for a call.
  const message = (id: number) => ({
    type: "call",
    id,
    module: NOOP,
    tool: "Noop",
    args: {},
    env: { workspace, grant, maxOutputBytes: 1_000_000 },
  });
  const okCheck = (r: { success: boolean; error?: string }) => {
    if (!r.success) throw new Error(`no-op call failed: ${r.error}`);
  };

  const worker = bareWorker();
  const child = bareChild();
  const regWorker = await corralRegistry("worker", workspace);
  const regProcess = await corralRegistry("process", workspace);
  // The same no-op in a sandbox that holds a write grant: its layer is settled after each call.
  const regLayered = await corralRegistry("process", workspace, { read: ["."], write: ["."] });
  const { tools: [noopDef] } = await collectTools(noopModule as Record<string, unknown>);
  const ctx = testContext({ workspace });
  const noopFn = noopModule.TOOL_CONFIGS[0].function;
  let id = 0;

  const variants: Record<string, Variant> = {
    direct: () => noopFn(),
    invokeTool: () => invokeTool(noopDef, {}, ctx),
    bareWorker: () => worker.call(message(++id)),
    bareChild: () => child.call(message(++id)),
    corralWorker: async () => okCheck(await regWorker.call("Noop", {})),
    corralProcess: async () => okCheck(await regProcess.call("Noop", {})),
    corralLayered: async () => okCheck(await regLayered.call("NoopWrite", {})),
  };
  const names = Object.keys(variants);

  // Warm-up: start every sandbox and let the JIT settle.
  const warm = Math.max(50, Math.min(1000, calls / 10));
  for (const name of names) await sequential(variants[name], warm);

  // 1. Sequential latency: rounds interleave the variants so that noise from
  //    other work on the machine hits all of them alike.
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const roundMedians: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const perRound = Math.ceil(calls / rounds);
  for (let r = 0; r < rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const name of order) {
      const s = await sequential(variants[name], perRound);
      samples[name].push(...s);
      roundMedians[name].push(quantile(s, 0.5));
    }
  }
  const latency: Record<string, LatencyResult> = {};
  for (const name of names) {
    const s = samples[name];
    latency[name] = {
      p50: quantile(s, 0.5),
      p99: quantile(s, 0.99),
      mean: s.reduce((a, b) => a + b, 0) / s.length,
      roundMedians: roundMedians[name],
      n: s.length,
    };
  }

  // 2. Throughput: `calls` requests issued at once.
  const throughput: Record<string, number[]> = {
    bareWorker: [],
    bareChild: [],
    corralWorker: [],
    corralProcess: [],
  };
  const concurrent = async (reg: Registry) => {
    const results = await Promise.all(
      Array.from({ length: calls }, () => reg.call("Noop", {})),
    );
    for (const r of results) okCheck(r);
  };
  const reps = Math.max(3, Math.min(5, rounds));
  for (let r = 0; r < reps; r++) {
    const runs: Array<[string, () => Promise<void>]> = [
      ["bareWorker", () => worker.pipelined(message, calls)],
      ["bareChild", () => child.pipelined(message, calls)],
      ["corralWorker", () => concurrent(regWorker)],
      ["corralProcess", () => concurrent(regProcess)],
    ];
    for (let i = 0; i < runs.length; i++) {
      const [name, run] = runs[(i + r) % runs.length];
      const t0 = performance.now();
      await run();
      throughput[name].push(calls / ((performance.now() - t0) / 1000));
    }
  }

  worker.close();
  await child.close();
  await regWorker.close();
  await regProcess.close();
  await regLayered.close();
  await Deno.remove(workspace, { recursive: true });
  const result: CallsResult = { calls, rounds, latency, throughput };
  console.log(JSON.stringify(result));
}

if (import.meta.main) {
  await main();
  // Sandboxes are closed; do not wait for stray handles.
  Deno.exit(0);
}
