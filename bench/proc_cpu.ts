/**
 * CPU time (user + system) of a process and of everything it started, read
 * from `/proc`: a measure of work that a busy machine's scheduling moves
 * less than wall time (bench/mcp.ts reads it around each block of calls).
 *
 * @module
 */

/** CPU time of each process in the tree of `pid`, in clock ticks; `pid` itself marked `own`. */
export function treeTicks(pid: number): Map<number, { ticks: number; own: boolean }> {
  const all = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      // After the command's closing parenthesis: state, ppid, … utime (14th), stime (15th).
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      all.set(Number(entry.name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch { /* gone meanwhile */ }
  }
  const children = new Map<number, number[]>();
  for (const [p, { ppid }] of all) children.set(ppid, [...(children.get(ppid) ?? []), p]);
  const out = new Map<number, { ticks: number; own: boolean }>();
  const walk = (p: number, own: boolean) => {
    const x = all.get(p);
    if (!x || out.has(p)) return;
    out.set(p, { ticks: x.ticks, own });
    for (const c of children.get(p) ?? []) walk(c, false);
  };
  walk(pid, true);
  return out;
}

/** Milliseconds of CPU between two {@link treeTicks}: the process's own and its children's. */
export function cpuBetween(
  before: ReturnType<typeof treeTicks>,
  after: ReturnType<typeof treeTicks>,
): { own: number; children: number } {
  const tickMs = 10; // USER_HZ is 100 on Linux
  let own = 0;
  let children = 0;
  for (const [p, { ticks, own: isOwn }] of after) {
    const d = (ticks - (before.get(p)?.ticks ?? 0)) * tickMs;
    if (isOwn) own += d;
    else children += d;
  }
  return { own, children };
}
