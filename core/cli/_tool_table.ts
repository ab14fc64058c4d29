/**
 * The tool table of `corral list` and `corral demo`: a header, then one
 * tool per two lines (name, toolset, letters, isolation, status; then
 * source, grant and jail, with its syscall filter).
 *
 * @module
 */
import { INSTALL_DIR } from "../config/mod.ts";
import type { ToolInfo } from "../registry/mod.ts";
import { describeGrant, holdsFilesOrCommands } from "../sandbox/mod.ts";
import { colour, lettersColour, terminalSafe } from "../tool/mod.ts";

const _ROOT = `${INSTALL_DIR}/`;

/**
 * The table of `tools`: a header row (two lines, as each entry), then one
 * entry per two lines; the name and toolset columns are as wide as their
 * longest entry, so a long name never shifts the columns after it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolTable } from "./_tool_table.ts";
 * const t = { toolset: "files", permissions: "r", isolation: "process", status: "loaded",
 *   source: "x.ts", grant: { read: [], write: [], run: [], net: [] } };
 * const rows = toolTable([{ ...t, name: "A" }, { ...t, name: "AVeryLongToolNameIndeedOfThirtyTwo" }] as never, false);
 * const col = (row: string) => row.split("\n")[0].indexOf("files");
 * assert.equal(col(rows[1]), col(rows[2]));
 * assert.equal(rows[0].split("\n")[0].indexOf("TOOLSET"), col(rows[1]));
 * ```
 */
export function toolTable(tools: ToolInfo[], color: boolean): string[] {
  const width = Math.max(10, ...tools.map((t) => terminalSafe(t.toolset).length));
  const nameWidth = Math.max(22, ...tools.map((t) => terminalSafe(t.name).length));
  const header = `${"NAME".padEnd(nameWidth)} ${"TOOLSET".padEnd(width)} ${"LETTERS"} ` +
    `${"ISOLATION"} STATUS\n${" ".repeat(nameWidth + 1)}SOURCE  GRANT  JAIL`;
  return [colour(header, "dim", color), ...tools.map((t) => toolRow(t, color, width, nameWidth))];
}

/** One tool's two lines; `width` is the toolset column's, `nameWidth` the name column's. */
export function toolRow(t: ToolInfo, color: boolean, width = 10, nameWidth = 22): string {
  // Names, reasons and sources come from plugins: no raw control characters.
  t = {
    ...t,
    name: terminalSafe(t.name),
    reason: t.reason === undefined ? undefined : terminalSafe(t.reason),
    source: terminalSafe(t.source),
    toolset: terminalSafe(t.toolset),
  };
  const letters = colour((t.permissions || "-").padEnd(7), lettersColour(t.permissions), color);
  const status = t.status === "loaded"
    ? colour("loaded", "green", color)
    : colour(`${t.status}: ${t.reason ?? ""}`, t.status === "skipped" ? "yellow" : "red", color);
  return `${t.name.padEnd(nameWidth)} ${t.toolset.padEnd(width)} ${letters} ${
    t.isolation.padEnd(9)
  } ${status}\n${" ".repeat(nameWidth + 1)}${
    colour(`${_relSource(t.source)}  grant: ${describeGrant(t.grant)}`, "dim", color)
  }${
    t.fallback
      ? colour(`  jail: NONE (worker: ${terminalSafe(t.fallback)})`, "yellow", color)
      : t.jail === "bwrap"
      ? colour(
        `  jail: bwrap (namespace = grant)${_wall(t)}`,
        t.seccomp?.filter === "off" ? "yellow" : "dim",
        color,
      )
      : t.jail === "none" && holdsFilesOrCommands(t.grant)
      ? colour("  jail: NONE (no namespace: opted out)", "yellow", color)
      : ""
  }`;
}

/** The jail's second wall: the syscall filter, its exceptions, or the opt-out. */
function _wall(t: ToolInfo): string {
  if (t.seccomp?.filter === "off") return ', NO seccomp filter (opted out: "seccomp": "off")';
  const except = t.seccomp?.except.length ? ` except ${t.seccomp.except.join(", ")}` : "";
  return t.seccomp ? ` + seccomp filter${except}` : "";
}

function _relSource(source: string): string {
  return source.startsWith(_ROOT) ? source.slice(_ROOT.length) : source;
}
