/**
 * `corral list [--json]`: every tool, loaded or not, with its toolset,
 * letters, isolation, grant, jail and status; then the modules and plugin
 * files that were skipped.
 *
 * @module
 */
import { limitKind } from "../jail/mod.ts";
import { colour, terminalSafe } from "../tool/mod.ts";
import type { CliSession } from "./_open_registry.ts";
import type { CliValues } from "./_options.ts";
import { out } from "./_output.ts";
import { toolTable } from "./_tool_table.ts";

/** Run `corral list`; returns the exit code. */
export function listCommand(values: CliValues, session: CliSession, color: boolean): number {
  if (values.json) out(JSON.stringify(_jsonRows(session), null, 2));
  else _humanList(session, color);
  return 0;
}

/** `list --json`: every tool, then what did not load. */
function _jsonRows({ registry, pluginWarnings }: CliSession): Record<string, unknown>[] {
  return [
    ...registry.list().map((t) => ({
      name: t.name,
      toolset: t.toolset,
      permissions: t.permissions,
      status: t.status,
      reason: t.reason ?? null,
      source: t.source,
      isolation: t.isolation,
      jail: t.jail ?? null,
      // The jail's second wall: { filter: "on" | "off", except: [...] } (core/seccomp/).
      seccomp: t.seccomp ?? null,
      // Why it runs in a worker rather than the policy's process sandbox (the host's flags).
      fallback: t.fallback ?? null,
      grant: t.grant,
    })),
    // Modules that failed to load and plugin files that were rejected: no tool name, status
    // "failed" or "rejected", and the reason.
    ...registry.problems.map((p) => _notLoaded("failed", p.message, p.toolset, p.source)),
    ...pluginWarnings.map((w) => _notLoaded("rejected", w, null, null)),
  ];
}

/** A `list --json` row of a module or plugin file that did not load. */
function _notLoaded(
  status: "failed" | "rejected",
  reason: string,
  toolset: string | null,
  source: string | null,
): Record<string, unknown> {
  return {
    name: null,
    toolset,
    permissions: "",
    status,
    reason,
    source,
    isolation: null,
    jail: null,
    grant: null,
  };
}

/** `list`: the tool table, what did not load, where the settings come from, the sandboxes. */
function _humanList({ registry, pluginWarnings, plugins }: CliSession, color: boolean): void {
  for (const row of toolTable(registry.list(), color)) out(row);
  for (const p of registry.problems) {
    out(colour(`did not load: ${terminalSafe(p.message)}`, "yellow", color));
  }
  for (const w of pluginWarnings) {
    out(colour(`did not load: ${terminalSafe(w)}`, "yellow", color));
  }
  const { policy } = plugins.settings;
  out(colour(
    terminalSafe(
      `settings: permissions.json from ${policy.files.join(" + ")}; grants are changed in ` +
        `${policy.editFile} (corral config shows every setting and its file)`,
    ),
    "dim",
    color,
  ));
  const ns = registry.list().some((t) => t.jail === "bwrap");
  const wall = registry.list().some((t) => t.seccomp?.filter === "on");
  out(colour(
    `sandboxes: ${
      ns ? `namespace (bwrap), mounts = grant${wall ? ", seccomp filter" : ""}` : "no namespace"
    }; process limits: ${_LIMITS[limitKind()]}`,
    "dim",
    color,
  ));
}

/** The process limits, as `list` names them. */
const _LIMITS = {
  cgroup2: "cgroup v2 (pids.max, memory.max)",
  cgroup1: "cgroup v1 (pids.max, memory.limit_in_bytes)",
  rlimit: "rlimits (ulimit -u, V8 heap; not binding for root)",
} as const;
