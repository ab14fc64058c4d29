/**
 * `corral config [--json]`: every setting in effect and the file it came
 * from. The files of each kind are read lowest layer first (corral's shipped
 * defaults, the user's config directory, the trusted project, the command
 * line) and merged key by key (core/config/settings.ts); values under
 * secret-looking keys are shown as `[redacted]`. Then the jail on this
 * machine: bwrap and the syscall filter, or why each is missing
 * (./_jail_report.ts).
 *
 * @module
 */
import type { SettingEntry, Settings } from "../config/mod.ts";
import { redact, SECRET_KEY } from "../base/mod.ts";
import { terminalSafe } from "../tool/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { jailLines, jailReport } from "./_jail_report.ts";
import type { CliValues } from "./_options.ts";
import { out } from "./_output.ts";

/** Run `corral config`; returns the exit code. */
export async function configCommand(values: CliValues): Promise<number> {
  const s = await cliSettings(values, { quiet: true });
  const view = settingsView(s);
  const jail = await jailReport(s.policy);
  if (values.json) {
    out(JSON.stringify({ ...view, jail }, null, 2));
    return 0;
  }
  out("Settings files, lowest layer first (a later file wins key by key):");
  for (const f of view.files) {
    const state = f.state === "used"
      ? ""
      : f.state === "absent"
      ? "  (none)"
      : "  (not trusted: ignored; review it, then corral trust)";
    out(terminalSafe(`  ${f.kind.padEnd(17)}${f.role.padEnd(9)}${f.file}${state}`));
  }
  out(terminalSafe(`Grants are changed in: ${view.edit}`));
  out("");
  for (const [key, e] of Object.entries(view.effective)) {
    out(terminalSafe(`${key} = ${_show(e.value)}   (${e.from})`));
  }
  for (
    const [title, list] of [["permissions.json", view.permissions], [
      "corral.json",
      view.config,
    ]] as const
  ) {
    out(`\n${title}:`);
    for (const e of list) {
      out(terminalSafe(`  ${e.key} = ${_show(e.value)}   (${e.from.join(" + ")})`));
    }
  }
  out("\nThe jail on this machine:");
  for (const line of jailLines(jail)) out(terminalSafe(`  ${line}`));
  return 0;
}

/** What `corral config --json` prints: the files, the derived settings, every key with its origin. */
export function settingsView(s: Settings) {
  const hide = (list: SettingEntry[]) =>
    list.map((e) => ({
      ...e,
      value: SECRET_KEY.test(e.key.split(/[.[]/).slice(1).join("."))
        ? "[redacted]"
        : redact(e.value),
    }));
  return {
    files: s.files,
    edit: s.policy.editFile,
    effective: {
      workspace: { value: s.workspace, from: s.workspaceFrom },
      letters: {
        value: s.letters,
        from: s.lettersGiven ? "-r -w -x -n" : "none of -r -w -x -n given: all",
      },
      toolsets: { value: s.toolsets, from: "corral.json toolsets, --toolset" },
      audit: { value: s.audit, from: _from(s.entries.config, "audit") ?? "default: off" },
      plugin_dirs: {
        value: s.pluginDirs.map((d) => d.dir),
        from: s.pluginDirs.map((d) => `${d.dir}: ${d.origin}`).join("; ") || "none",
      },
      discovery_cache: { value: s.cache, from: s.cache ? "default" : "--no-cache" },
    },
    permissions: hide(s.entries.permissions),
    config: hide(s.entries.config),
  };
}

function _from(entries: SettingEntry[], key: string): string | undefined {
  return entries.find((e) => e.key === key)?.from.join(" + ");
}

function _show(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}
