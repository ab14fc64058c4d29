/**
 * `corral list [--json]`: every tool, loaded or not, with its toolset,
 * letters, isolation, grant, jail and status; then the modules and plugin
 * files that were skipped.
 *
 * @module
 */
import { limitKind } from "../jail/mod.ts";
import { colour, terminalSafe } from "../tool/mod.ts";
import type { CliSession } from "./open_registry.ts";
import type { CliValues } from "./options.ts";
import { out } from "./output.ts";
import { toolTable } from "./tool_table.ts";

/** Run `corral list`; returns the exit code. */
export function listCommand(values: CliValues, session: CliSession, color: boolean): number {
  const { registry, pluginWarnings } = session;
  if (values.json) {
    out(JSON.stringify(
      registry.list().map((t) => ({
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
      })).concat(
        // Modules that failed to load and plugin files that were rejected: no tool
        // name, status "failed" or "rejected", and the reason.
        registry.problems.map((p) => ({
          name: null,
          toolset: p.toolset,
          permissions: "",
          status: "failed",
          reason: p.message,
          source: p.source,
          isolation: null,
          jail: null,
          grant: null,
        })) as never[],
        pluginWarnings.map((w) => ({
          name: null,
          toolset: null,
          permissions: "",
          status: "rejected",
          reason: w,
          source: null,
          isolation: null,
          jail: null,
          grant: null,
        })) as never[],
      ),
      null,
      2,
    ));
    return 0;
  }
  for (const row of toolTable(registry.list(), color)) out(row);
  for (const p of registry.problems) {
    out(colour(`did not load: ${terminalSafe(p.message)}`, "yellow", color));
  }
  for (const w of pluginWarnings) {
    out(colour(`did not load: ${terminalSafe(w)}`, "yellow", color));
  }
  const { policy } = session.plugins.settings;
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
  return 0;
}

const _LIMITS = {
  cgroup2: "cgroup v2 (pids.max, memory.max)",
  cgroup1: "cgroup v1 (pids.max, memory.limit_in_bytes)",
  rlimit: "rlimits (ulimit -u, V8 heap; not binding for root)",
} as const;
