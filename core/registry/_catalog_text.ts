/**
 * How the catalog (./catalog.ts) names modules and collisions in its
 * messages: the operator's terminal gets full paths, text that may reach
 * the model gets them shortened.
 *
 * @module
 */
import { basename, relative } from "node:path";
import { INSTALL_DIR } from "../config/mod.ts";
import type { ToolsetSource } from "./toolset_source.ts";

/** How a name defined twice in one file is told, in `list`, warnings and `corral check`. */
export const DEFINED_TWICE = "defined twice in";
/** Which of two definitions of a name in one file is used. */
export const LATER_USED = "the later definition is used";

/**
 * A source for the operator's own terminal: its toolset and the full path
 * (paths are shortened only in text that reaches the model).
 */
export function fullSource(source: ToolsetSource, module: string): string {
  return `${source.id} (${module})`;
}

/** A module for messages: relative to corral's folder or the workspace, else `.../<name>`. */
export function displayModule(module: string, workspace: string): string {
  if (!module.startsWith("/")) return module;
  const inRoot = relative(INSTALL_DIR, module);
  if (!inRoot.startsWith("..")) return inRoot;
  const inWs = relative(workspace, module);
  return inWs.startsWith("..") ? `.../${basename(module)}` : inWs;
}

/** A module error on one line: no colours, the first line and the error's location. */
export function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter(
    Boolean,
  );
  // The location, and what follows it on its line (" (remembered: …)" of a cached failure).
  const at = lines.slice(1).map((l) => /^(at \S+:\d+:\d+)(.*)$/.exec(l)).find((m) => m);
  return at ? `${lines[0]} (${at[1]})${at[2]}` : lines[0] ?? "";
}
