/**
 * `corral stats [--json]`: every sandbox the loaded tools run in, started
 * as a first call starts it (its modules imported), and what it holds in
 * memory: the RSS and PSS of its whole process tree (core/base/; PSS
 * shares each shared page among the processes that map it, so sandboxes'
 * PSS add up to what they cost together). A worker sandbox lives in the
 * host: its memory is the host's, shown on the host's line. A long-running
 * server shows the same of its live sandboxes at `/metrics`
 * (`corral_sandbox_rss_bytes`, `corral_sandbox_pss_bytes`).
 *
 * @module
 */
import { processTreeMemory } from "../base/mod.ts";
import type { Sandbox } from "../sandbox/mod.ts";
import { terminalSafe } from "../tool/mod.ts";
import type { CliSession } from "./_open_registry.ts";
import type { CliValues } from "./_options.ts";
import { out } from "./_output.ts";

/** One row of `corral stats --json`. */
interface _Row {
  sandbox: string;
  isolation: "process" | "worker" | "host";
  tools: string[];
  pid: number | null;
  rss: number | null;
  pss: number | null;
  processes: number | null;
  error: string | null;
}

/** How long one sandbox may take to start and import its modules. */
const _START_MS = 60_000;

/** Run `corral stats`; returns the exit code (1 when a sandbox did not start). */
export async function statsCommand(values: CliValues, { registry }: CliSession): Promise<number> {
  const started = new Map<Sandbox, string[]>();
  const rows: _Row[] = [];
  for (const tool of registry.loaded()) {
    let sb: Sandbox;
    try {
      sb = await registry.sandboxFor(tool.name);
    } catch {
      continue; // a hosted server's tool: its server is no tool sandbox (corral servers list)
    }
    const tools = started.get(sb);
    if (tools) tools.push(tool.name);
    else started.set(sb, [tool.name]);
  }
  for (const [sb, tools] of started) rows.push(await _start(sb, tools));
  // One read for all (core/base/process_memory.sh), the host's whole tree among them.
  const read = await processTreeMemory([
    Deno.pid,
    ...rows.flatMap((r) => r.pid === null ? [] : [r.pid]),
  ]);
  for (const r of rows) {
    const m = r.pid === null ? undefined : read.get(r.pid);
    if (m) Object.assign(r, { rss: m.rss, pss: m.pss, processes: m.processes });
  }
  const host = read.get(Deno.pid);
  rows.unshift({
    sandbox: "host",
    isolation: "host",
    tools: [],
    pid: Deno.pid,
    // The host alone: its process sandboxes are below it and counted on their own lines.
    rss: Deno.memoryUsage().rss,
    pss: host ? host.pss - rows.reduce((sum, r) => sum + (r.pss ?? 0), 0) : null,
    processes: 1,
    error: null,
  });
  if (values.json) out(JSON.stringify(rows, null, 2));
  else for (const line of _table(rows)) out(line);
  return rows.some((r) => r.error) ? 1 : 0;
}

/** Start `sb` (its modules imported, as a first call does) and say where it runs. */
async function _start(sb: Sandbox, tools: string[]): Promise<_Row> {
  const { label, grant, modules, policy, workspace } = sb.options;
  const row: _Row = {
    sandbox: label,
    isolation: policy.isolation,
    tools,
    pid: null,
    rss: null,
    pss: null,
    processes: null,
    error: null,
  };
  try {
    const [metas] = await sb.load([{ modules, env: { workspace, grant }, timeoutMs: _START_MS }]);
    const failed = metas.find((m) => m.error);
    if (failed) row.error = failed.error!;
  } catch (err) {
    row.error = (err as Error).message;
  }
  row.pid = sb.pid ?? null;
  return row;
}

/** The human table: one line a sandbox, sizes in MiB. */
function _table(rows: _Row[]): string[] {
  const mib = (n: number | null) => n === null ? "-" : (n / 1048576).toFixed(1);
  const width = Math.max(12, ...rows.map((r) => terminalSafe(r.sandbox).length));
  const lines = [
    `${"SANDBOX".padEnd(width)} ${"ISOLATION".padEnd(9)} ${"PID".padStart(7)} ` +
    `${"RSS MiB".padStart(8)} ${"PSS MiB".padStart(8)} TOOLS`,
  ];
  for (const r of rows) {
    const where = r.tools.join(", ") +
      (r.isolation === "worker" ? " (its memory is the host's)" : "");
    lines.push(
      `${terminalSafe(r.sandbox).padEnd(width)} ${r.isolation.padEnd(9)} ` +
        `${String(r.pid ?? "-").padStart(7)} ${mib(r.rss).padStart(8)} ${mib(r.pss).padStart(8)} ` +
        terminalSafe(r.error ? `did not start: ${r.error}` : where),
    );
  }
  return lines;
}
