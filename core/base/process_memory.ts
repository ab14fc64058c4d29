/**
 * What a process and every process below it hold in memory, read from
 * Linux's `/proc`: the resident set (RSS) and the proportional set (PSS:
 * each shared page divided among the processes that map it, so that the
 * PSS of many sandboxes adds up to what they cost together). A process
 * sandbox is a tree (the launcher's process, bwrap, the namespace's first
 * process, Deno); each is read from `/proc/PID/smaps_rollup` by
 * ./process_memory.sh (Deno reads another process's `/proc` files only
 * with `--allow-all`, which corral's host never holds; it may run bash).
 *
 * @module
 */
import { shellProgram } from "./self_run.ts";

/** What {@link processTreeMemory} read, in bytes. */
export interface TreeMemory {
  /** Resident set of the whole tree. */
  rss: number;
  /** Proportional set of the whole tree. */
  pss: number;
  /** How many processes were read. */
  processes: number;
}

/**
 * The memory of each of `pids` with its descendants (one run of bash for
 * all); a PID that is gone or cannot be read (another user's process, no
 * `/proc`, no bash) is missing from the map. A descendant that ends while
 * it is read is left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { processTreeMemory } from "./process_memory.ts";
 * const read = await processTreeMemory([Deno.pid, 2 ** 22 + 1]); // the second: above any PID
 * const own = read.get(Deno.pid)!;
 * assert.ok(own.rss > 1024 * 1024 && own.pss > 0 && own.pss <= own.rss);
 * assert.equal(read.has(2 ** 22 + 1), false);
 * ```
 */
export async function processTreeMemory(pids: number[]): Promise<Map<number, TreeMemory>> {
  const read = new Map<number, TreeMemory>();
  if (!pids.length) return read;
  let text: string;
  try {
    const out = await new Deno.Command("/bin/bash", {
      args: [shellProgram("core/base/process_memory.sh"), ...pids.map(String)],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
    }).output();
    text = new TextDecoder().decode(out.stdout);
  } catch {
    return read; // no bash, or no right to run it
  }
  for (const line of text.split("\n")) {
    const [pid, rss, pss, processes] = line.split(" ").map(Number);
    if (!pids.includes(pid) || !(rss >= 0 && pss >= 0 && processes >= 1)) continue;
    read.set(pid, { rss: rss * 1024, pss: pss * 1024, processes });
  }
  return read;
}
