/**
 * What the sandbox namespace costs (section 7): the same files toolset, in
 * process isolation, three ways, interleaved round by round so that machine
 * noise falls on all of them:
 *
 * - `fd`: the namespace as corral starts it today (`"jail": "required"`):
 *   the launcher opens and checks every bound path and bwrap binds the open
 *   descriptors (core/jail/limits.ts), inherited descriptors closed,
 *   placeholders of protected files, the execute-only runtime;
 * - `byName`: the same namespace bound by name as before fd binding: the
 *   sandbox's start command rewritten by ./by_name.ts (no checks, no
 *   `--args` pipe, no sealed runtime);
 * - `without`: no namespace (`"jail": "off"`: the same child and cgroup);
 * - `unfiltered`: today's namespace without its syscall filter (`"seccomp":
 *   "off"`): what the jail's second wall (core/seccomp/) costs.
 *
 * Then the launch alone: the captured start command with the runtime's
 * arguments replaced by `--version`, started LAUNCHES times each way,
 * alternating: today's (`fd`), today's launcher without the sealed runtime
 * (`unsealed`), and by name (`byName`). Run as a child of bench/run.ts:
 *
 *     deno run -A bench/namespace.ts RUNS WARM_CALLS LAUNCHES
 *
 * Each cold run: a fresh registry (discovery from a warm cache), then the
 * first call of WordCount, which starts the sandbox (the cold call), then
 * WARM_CALLS more (warm calls). Prints one JSON line.
 *
 * @module
 */
import { parsePolicy } from "../core/config/mod.ts";
import { createLimits } from "../core/jail/mod.ts";
import { Registry } from "../core/registry/mod.ts";
import { Reporter } from "../core/tool/mod.ts";
import { tempDir } from "../testing/temp_dir.ts";
import {
  byNameCommand,
  isLaunch,
  type Launch,
  parseLaunch,
  relaunch,
  todayCommand,
  unseal,
} from "./by_name.ts";
import { median } from "./lib.ts";

type _Mode = "fd" | "byName" | "without" | "unfiltered";
type _Way = "fd" | "unsealed" | "byName";

const [runs, warmCalls, launches] = Deno.args.map(Number);
const ws = await tempDir("corral_bench_ns_");
const cache = await tempDir("corral_bench_ns_cache_");
await Deno.writeTextFile(`${ws}/a.txt`, "one two three\n".repeat(10));

// The sandbox's spawn goes through Deno.Command: in `byName` rounds its
// command is rewritten; a `fd` round's is kept for the launch rounds.
const Original = Deno.Command;
let mode: _Mode = "fd";
let captured: { launch: Launch; options: Deno.CommandOptions } | undefined;
let rewritten = 0;
class _Command extends Original {
  constructor(command: string | URL, options: Deno.CommandOptions = {}) {
    if (typeof command === "string" && options.args && isLaunch(command, options.args)) {
      const launch = parseLaunch(command, options.args);
      // The launch rounds start today's command: the one of a `fd` round (filter included).
      if (mode === "fd") captured = { launch, options };
      if (mode === "byName") {
        const b = byNameCommand(launch);
        rewritten++;
        super(b.command, { ...options, args: b.args });
        return;
      }
    }
    super(command, options);
  }
}
(Deno as unknown as { Command: typeof Deno.Command }).Command = _Command;

const policies = {
  fd: _policy("required"),
  byName: _policy("required"),
  without: _policy("off"),
  unfiltered: _policy("required", "off"),
};

function _policy(jail: "required" | "off", seccomp: "required" | "off" = "required") {
  return parsePolicy(
    JSON.stringify({ toolsets: { files: { read: ["."], write: ["."], jail, seccomp } } }),
    "bench.json",
    ws,
  );
}

/** One cold run of a variant: its cold call and its warm calls. */
async function _run(m: _Mode): Promise<{ cold: number; warm: number[] }> {
  mode = m;
  const registry = await Registry.create({
    workspace: ws,
    policy: policies[m],
    privileges: "rw",
    cacheDir: cache,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  try {
    let t = performance.now();
    const first = await registry.call("WordCount", { filepath: "a.txt" });
    if (!first.success) throw new Error(`WordCount failed (${m}): ${first.error}`);
    const cold = performance.now() - t;
    const warm: number[] = [];
    for (let i = 0; i < warmCalls; i++) {
      t = performance.now();
      await registry.call("WordCount", { filepath: "a.txt" });
      warm.push(performance.now() - t);
    }
    return { cold, warm };
  } finally {
    await registry.close();
  }
}

/**
 * Start the captured launch once (runtime `--version`): today's way, today's
 * launcher without the sealed runtime, or by name; its wall time.
 */
async function _launch(way: _Way): Promise<number> {
  const { launch, options } = captured!;
  const pids = Number(launch.head[0]);
  const memoryMb = launch.head.length > 1 ? Number(launch.head[1]) / 1024 / 1024 : 256;
  const limits = createLimits({ pids, memoryMb }, true);
  try {
    const l = relaunch(launch, limits.groups, ["--version"]);
    const c = way === "byName"
      ? byNameCommand(l)
      : todayCommand(way === "unsealed" ? unseal(l) : l);
    const t = performance.now();
    const out = await new Original(c.command, {
      ...options,
      args: c.args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const ms = performance.now() - t;
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success || !text.includes("deno")) {
      const err = new TextDecoder().decode(out.stderr).slice(-500);
      throw new Error(`launch (${way}) failed (${out.code}): ${err}`);
    }
    return ms;
  } finally {
    await limits.release();
  }
}

const modes: _Mode[] = ["fd", "byName", "without", "unfiltered"];
const cold: Record<_Mode, number[]> = { fd: [], byName: [], without: [], unfiltered: [] };
const warm: Record<_Mode, number[]> = { fd: [], byName: [], without: [], unfiltered: [] };
for (let r = 0; r < runs + 1; r++) {
  // Round 0 warms the caches; the order turns round by round.
  for (const m of r % 2 ? [...modes].reverse() : modes) {
    const one = await _run(m);
    if (r === 0) continue;
    cold[m].push(one.cold);
    warm[m].push(...one.warm);
  }
}
if (rewritten < runs + 1) throw new Error(`bench: ${rewritten} by-name starts, not ${runs + 1}`);
const ways: _Way[] = ["fd", "unsealed", "byName"];
const launch: Record<_Way, number[]> = { fd: [], unsealed: [], byName: [] };
for (const w of ways) await _launch(w); // warm-up
for (let i = 0; i < launches; i++) {
  for (const w of i % 2 ? [...ways].reverse() : ways) launch[w].push(await _launch(w));
}
await Deno.remove(ws, { recursive: true });
await Deno.remove(cache, { recursive: true });
const variant = (m: _Mode) => {
  const coldMs = median(cold[m]);
  const warmMs = median(warm[m]);
  return { coldMs, warmMs, startMs: coldMs - warmMs, cold: cold[m], calls: warm[m].length };
};
console.log(JSON.stringify({
  withNs: variant("fd"),
  byName: variant("byName"),
  without: variant("without"),
  unfiltered: variant("unfiltered"),
  launch,
}));
