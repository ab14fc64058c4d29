/**
 * `corral changes [list] [--json] | show ID | apply ID | drop ID`: the
 * changes held for review (`--hold`, `"hold": true`) of the workspace.
 * `show` prints each change as a unified diff with the verdict applying it
 * now would get; `apply` settles the set against the tree as it is now,
 * through the very judge and applier a call's settlement uses
 * (core/layers/held_apply.ts): what is refused stays refused, what the user
 * changed since is a conflict and their version stays; `drop` discards it.
 * Applying and dropping are audited (`kind: "held"` lines).
 *
 * @module
 */
import { type AuditHeldRecord, AuditLog } from "../audit/mod.ts";
import {
  type ChangeReport,
  findHeld,
  HELD_ID,
  HeldCorrupt,
  type HeldFound,
  type HeldManifest,
  HeldNotFound,
  heldRules,
  type LayerRules,
  listHeld,
  lockHeld,
  notAppliedText,
  pathFolders,
  readHeld,
  removeHeld,
  settleHeld,
} from "../layers/mod.ts";
import { grantPaths, registryFolders } from "../registry/mod.ts";
import type { Settings } from "../config/mod.ts";
import { terminalSafe } from "../tool/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { heldDiff } from "./_held_diff.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";

/** Run `corral changes …`; returns the exit code. */
export async function changesCommand(values: CliValues, rest: string[]): Promise<number> {
  const [sub = "list", id] = rest;
  if (!["list", "show", "apply", "drop"].includes(sub)) {
    throw new UsageError(
      `changes: unknown subcommand "${sub}" (list, show ID, apply ID, drop ID)`,
    );
  }
  if (sub !== "list" && !id) throw new UsageError(`changes ${sub} needs the ID (corral changes)`);
  if (sub === "list" && id) throw new UsageError(`changes list takes no ID`);
  const settings = await cliSettings(values, { quiet: true });
  try {
    if (sub === "list") return _list(settings.workspace, !!values.json);
    if (sub === "drop") return await _drop(id, settings);
    const found = findHeld(id, settings.workspace);
    if (sub === "show") {
      const s = await settleHeld(found, _rules(found.manifest, settings), true);
      out(terminalSafe(await heldDiff(found.manifest, found.dir, s)));
      return 0;
    }
    return await _apply(found, settings);
  } catch (err) {
    if (err instanceof HeldNotFound) throw new UsageError(err.message);
    if (err instanceof HeldCorrupt) {
      console.error(`corral: ${terminalSafe(err.message)}`);
      return 1;
    }
    throw err;
  }
}

function _list(workspace: string, json: boolean): number {
  const all = listHeld();
  const mine = all.filter((h) => h.manifest?.workspace === workspace);
  const broken = all.filter((h) => !h.manifest);
  const others = all.length - mine.length - broken.length;
  if (json) {
    for (const h of mine) out(JSON.stringify(_summary(h.manifest!)));
    for (const h of broken) out(JSON.stringify({ id: h.id, corrupted: h.broken }));
    return 0;
  }
  const lines = [`Held changes of ${workspace}: ${mine.length || "none"}`];
  for (const h of mine) {
    const s = _summary(h.manifest!);
    lines.push(
      `  ${s.id}  ${s.time.slice(0, 19).replace("T", " ")}  ${s.tools.join(", ")} (${s.toolset}; ` +
        `${s.by.join(", ")})  ${s.changes} change(s): ${s.paths.slice(0, 5).join(" ")}` +
        (s.paths.length > 5 ? " …" : ""),
    );
  }
  for (const h of broken) {
    lines.push(`  ${h.id}  corrupted: ${h.broken} (corral changes drop ${h.id})`);
  }
  if (others) {
    lines.push(`(${others} held set(s) of other workspaces: corral changes --workspace DIR)`);
  }
  if (mine.length) {
    lines.push("corral changes show ID: the diff and what applying it now does; apply ID; drop ID");
  }
  out(terminalSafe(lines.join("\n")));
  return 0;
}

/** One held set as `corral changes --json` prints it. */
function _summary(m: HeldManifest) {
  const paths: string[] = [];
  let changes = 0;
  for (const r of m.roots) {
    for (const e of r.entries) {
      if (e.change === "=") continue;
      changes++;
      const abs = `${r.root}/${e.rel}`;
      const rel = abs.startsWith(`${m.workspace}/`) ? abs.slice(m.workspace.length + 1) : abs;
      if (paths.length < 20) paths.push(e.change + rel);
    }
    changes += r.notHeld.length;
  }
  const { id, time, toolset, tools, by, workspace } = m;
  return { id, time, workspace, toolset, tools, by, changes, paths };
}

async function _apply(found: HeldFound & { manifest: HeldManifest }, settings: Settings) {
  const audit = await _audit(settings);
  const release = lockHeld(found.dir, found.id);
  let report: ChangeReport;
  try {
    report = (await settleHeld(found, _rules(found.manifest, settings), false)).report;
    await audit?.append(_line(found.manifest, "applied", report));
    await removeHeld(found.dir);
  } catch (err) {
    release();
    throw err;
  }
  const done = report.created + report.changed + report.removed;
  const lines = [`held changes ${found.id}: ${done} applied (${report.paths.join(" ")})`];
  const not = notAppliedText(report);
  if (not) lines.push(not);
  for (const m of report.masked ?? []) lines.push(`${m.path}: mode masked: ${m.why}`);
  out(terminalSafe(lines.join("\n")));
  return not ? 1 : 0;
}

async function _drop(id: string, settings: Settings): Promise<number> {
  let found: HeldFound;
  try {
    found = findHeld(id, settings.workspace);
  } catch (err) {
    // A corrupted set may still be dropped: its manifest (and its workspace) is unreadable.
    const broken = HELD_ID.test(id) && listHeld().find((h) => h.id === id && !h.manifest);
    if (!(err instanceof HeldCorrupt) || !broken) throw err;
    found = broken;
  }
  const audit = await _audit(settings);
  const release = lockHeld(found.dir, found.id);
  try {
    const m = found.manifest ?? readHeld(found.id, found.dir).manifest;
    await audit?.append(
      m ? _line(m, "dropped") : {
        time: new Date().toISOString(),
        kind: "held",
        action: "dropped",
        held: id,
        identity: "local",
        session: "local",
      },
    );
    await removeHeld(found.dir);
  } catch (err) {
    release();
    throw err;
  }
  out(`held changes ${id} dropped`);
  return 0;
}

/** The audit log of the settings, checked writable (refused when it must be and is not). */
async function _audit(settings: Settings): Promise<AuditLog | undefined> {
  if (!settings.audit) return undefined;
  const log = new AuditLog(settings.audit, {
    ...(settings.config.auditMaxBytes !== null ? { maxBytes: settings.config.auditMaxBytes } : {}),
  });
  try {
    await log.check();
    return log;
  } catch (err) {
    if (!settings.config.auditRequired) return undefined;
    throw new Error(
      `the audit log ${settings.audit} cannot be written (${(err as Error).message}): ` +
        `nothing is applied or dropped unaudited`,
    );
  }
}

function _line(
  m: HeldManifest,
  action: "applied" | "dropped",
  changes?: ChangeReport,
): AuditHeldRecord {
  return {
    time: new Date().toISOString(),
    kind: "held",
    action,
    held: m.id,
    workspace: m.workspace,
    toolset: m.toolset,
    tools: m.tools,
    identity: "local",
    session: "local",
    ...(changes ? { changes } : {}),
  };
}

/** The rules of the set: those it was held under, and those of the settings in force now. */
function _rules(m: HeldManifest, settings: Settings): LayerRules {
  const { policy, workspace, config } = settings;
  const folders = registryFolders(
    {
      ...(settings.audit ? { auditPath: settings.audit } : {}),
      trusted: (config.files ?? []).map((path) => ({ path, what: "a config file" })),
    },
    policy,
    null,
    workspace,
  );
  return heldRules(m, {
    workspace,
    entries: policy.planted,
    trust: folders.trusted,
    pathDirs: pathFolders(),
    grantPaths: grantPaths(policy, [], workspace),
  });
}
