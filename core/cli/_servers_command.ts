/**
 * `corral servers [list]`: the hosted MCP servers of corral.json, their
 * install and approval state, and, for each running in a corral of this
 * user, its view of the workspace (current, or what it could not refresh:
 * core/layers/view_refresh.ts). `corral servers install [NAME]`: install
 * (npm, PyPI) at the exact version with integrity recorded, then start each
 * server once that has no approved tools and record them. `corral servers
 * approve NAME`: start it, show what changed, record what it lists now as
 * approved.
 *
 * @module
 */
import {
  changedFields,
  installed,
  installServer,
  readApproved,
  readSeen,
  serverLetters,
} from "../hosted/mod.ts";
import { layerBases, type ServerEntry } from "../config/mod.ts";
import { type PublishedView, publishedViews } from "../layers/mod.ts";
import type { Registry } from "../registry/mod.ts";
import { effectiveGrant } from "../sandbox/mod.ts";
import { Reporter, terminalSafe } from "../tool/mod.ts";
import { openRegistry } from "./_open_registry.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";

/** Run `corral servers`; returns the exit code. */
export async function serversCommand(values: CliValues, rest: string[]): Promise<number> {
  const sub = rest[0] ?? "list";
  if (!["list", "install", "approve"].includes(sub)) {
    throw new UsageError(`unknown servers command "${sub}" (list, install, approve)`);
  }
  if (sub === "approve" && !rest[1]) throw new UsageError("servers approve needs a server name");
  const session = await openRegistry(values, new Reporter({ quiet: values.quiet }));
  const { registry } = session;
  try {
    const names = _names(registry, rest[1]);
    if (sub === "list") return _list(names, registry.hosted.entry.bind(registry.hosted), values);
    let failed = 0;
    for (const name of names) {
      try {
        await _installOrApprove(registry, name, sub === "install");
      } catch (err) {
        failed++;
        out(`${name}: ${terminalSafe((err as Error).message)}`);
      }
    }
    return failed ? 1 : 0;
  } finally {
    await registry.close();
  }
}

/** The server named, or every server of corral.json; a usage error for a name it lacks. */
function _names(registry: Registry, named: string | undefined): string[] {
  const entries = registry.hosted.entries;
  const names = named ? [named] : entries.map((e) => e.name);
  for (const n of names) {
    if (!registry.hosted.entry(n)) {
      throw new UsageError(
        `no server "${n}" in corral.json (servers: ${
          entries.map((e) => e.name).join(", ") || "none"
        })`,
      );
    }
  }
  return names;
}

/**
 * `install` one server (then approve it, unless it has approved tools
 * already) or `approve` it: started, its tools recorded, what changed said.
 */
async function _installOrApprove(
  registry: Registry,
  name: string,
  install: boolean,
): Promise<void> {
  const entry = registry.hosted.entry(name)!;
  if (install) {
    const r = await installServer(entry);
    if (r) out(`${name}: installed ${r.package}@${r.version} (${r.integrity})`);
    if (readApproved(name)) return;
  }
  const before = readApproved(name) ?? [];
  const policy = registry.policy.server(name);
  const grant = effectiveGrant(serverLetters(policy), policy, registry.host).grant;
  const tools = await registry.hosted.approve(name, policy, grant);
  // A tool that allow/deny keep back is recorded, never offered: not "approved" for use.
  const offered = tools.filter((t) =>
    (!entry.allow || entry.allow.includes(t)) && !entry.deny.includes(t)
  );
  out(`${name}: approved ${offered.length} tools: ${offered.join(", ") || "none"}`);
  const held = tools.filter((t) => !offered.includes(t));
  if (held.length) {
    out(`  not offered (servers.${name}.tools allow/deny in corral.json): ${held.join(", ")}`);
  }
  const seen = readApproved(name) ?? [];
  for (const t of seen) {
    const f = changedFields(t, before.find((b) => b.name === t.name));
    if (before.length && f.length) out(`  ${t.name}: ${f.join(", ")}`);
  }
}

/** `servers list [--json]`: each server's package, install, approval and running views. */
function _list(
  names: string[],
  entryOf: (n: string) => ServerEntry | undefined,
  values: CliValues,
): number {
  // Servers running now in any corral of this user: what their view of the workspace is.
  const views = publishedViews(layerBases());
  const alive = _running([...new Set([...views.values()].flat().map((v) => v.corral))]);
  const rows = names.map((name) => _row(name, entryOf(name)!, views.get(name) ?? [], alive));
  if (values.json) out(JSON.stringify(rows, null, 2));
  else for (const r of rows) _print(r);
  return 0;
}

/** One server's row of `servers list`. */
function _row(name: string, e: ServerEntry, views: PublishedView[], alive: Set<number>) {
  const inst = installed(e);
  const approved = readApproved(name);
  const seen = readSeen(name);
  const changed = (seen ?? []).map((t) => ({
    tool: t.name,
    fields: changedFields(t, approved?.find((a) => a.name === t.name)),
  })).filter((c) => c.fields.length);
  return {
    name,
    kind: e.kind,
    package: e.kind === "command" ? e.command.join(" ") : `${e.package}@${e.version}`,
    installed: typeof inst === "string" ? inst : `yes (${inst.integrity})`,
    // Recorded but kept back by allow/deny: never offered, so not counted as approved.
    approved: approved
      ? approved.filter((t) => (!e.allow || e.allow.includes(t.name)) && !e.deny.includes(t.name))
        .length
      : null,
    changed,
    running: views.filter((v) => alive.has(v.corral)).map((v) => ({
      corral: v.corral,
      refreshes: v.refreshes,
      refreshed: v.refreshed,
      view: v.stale ?? "current",
    })),
  };
}

/** A row of `servers list` for a person. */
function _print(r: ReturnType<typeof _row>): void {
  out(`${r.name}  ${r.kind} ${terminalSafe(r.package)}`);
  out(`  installed: ${terminalSafe(r.installed)}`);
  out(`  approved tools: ${r.approved ?? "none yet (corral servers install " + r.name + ")"}`);
  for (const c of r.changed) out(`  changed since approval: ${c.tool} (${c.fields.join(", ")})`);
  for (const v of r.running) {
    out(
      `  running in corral ${v.corral}: view of the workspace ${
        v.view === "current"
          ? `current (made ${v.refreshed}; refreshed ${v.refreshes} times since it started)`
          : `stale: ${terminalSafe(v.view)}`
      }`,
    );
  }
}

/**
 * The corral processes among `pids` that still run: one killed outright
 * leaves its views behind until the next corral sweeps its folders
 * (core/layers/layer_dirs.ts). When that cannot be told, all of them.
 */
function _running(pids: number[]): Set<number> {
  if (pids.length === 0) return new Set();
  try {
    const done = new Deno.Command("/bin/sh", {
      args: [
        "-c",
        'for p; do [ -d "/proc/$p" ] && echo "$p"; done',
        "corral-alive",
        ...pids.map(String),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).outputSync();
    return new Set(new TextDecoder().decode(done.stdout).split("\n").filter(Boolean).map(Number));
  } catch {
    return new Set(pids);
  }
}
