/**
 * The tool table of `corral list` and `corral demo`: one tool per two
 * lines (name, toolset, letters, isolation, status; then source, grant and
 * jail).
 *
 * @module
 */
import { INSTALL_DIR } from "../config/install_dir.ts";
import type { ToolInfo } from "../registry/registry.ts";
import { describeGrant, holdsFilesOrCommands } from "../sandbox/grant.ts";
import { colour, lettersColour, terminalSafe } from "../tool/reporter.ts";

const _ROOT = `${INSTALL_DIR}/`;

/** The table of `tools`, one entry per two lines. */
export function toolTable(tools: ToolInfo[], color: boolean): string[] {
  const width = Math.max(10, ...tools.map((t) => t.toolset.length));
  return tools.map((t) => toolRow(t, color, width));
}

/** One tool's two lines; `width` is the toolset column's. */
export function toolRow(t: ToolInfo, color: boolean, width = 10): string {
  // Names, reasons and sources come from plugins: no raw control characters.
  t = {
    ...t,
    name: terminalSafe(t.name),
    reason: t.reason === undefined ? undefined : terminalSafe(t.reason),
    source: terminalSafe(t.source),
    toolset: terminalSafe(t.toolset),
  };
  const letters = colour((t.permissions || "-").padEnd(4), lettersColour(t.permissions), color);
  const status = t.status === "loaded"
    ? colour("loaded", "green", color)
    : colour(`${t.status}: ${t.reason ?? ""}`, t.status === "skipped" ? "yellow" : "red", color);
  return `${t.name.padEnd(22)} ${t.toolset.padEnd(width)} ${letters} ${
    t.isolation.padEnd(8)
  } ${status}\n${" ".repeat(23)}${
    colour(`${_relSource(t.source)}  grant: ${describeGrant(t.grant)}`, "dim", color)
  }${
    t.jail === "bwrap"
      ? colour("  jail: bwrap (namespace = grant)", "dim", color)
      : t.jail === "none" && holdsFilesOrCommands(t.grant)
      ? colour("  jail: NONE (no namespace: opted out)", "yellow", color)
      : ""
  }`;
}

function _relSource(source: string): string {
  return source.startsWith(_ROOT) ? source.slice(_ROOT.length) : source;
}
