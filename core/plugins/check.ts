/**
 * `corral check PATH…`: load plugin files the way discovery does (each in
 * its own sandbox, with the grant permissions.json gives it) and report
 * every contract breach, per tool: missing or empty description, a name that
 * does not match the pattern or is duplicated, a schema that is not a JSON
 * Schema object, unknown permission letters, letters broader than the policy
 * grants, a module that fails to import or exports no tools.
 *
 * @module
 */
import { basename, dirname, extname, resolve } from "node:path";
import { type Letter, LETTER_NAMES, LETTERS, Reporter, TOOL_NAME_PATTERN } from "../tool/mod.ts";
import { scanPluginDir } from "./plugin_files.ts";
import { uniqueLabels } from "./plugins.ts";
import { loadPolicy, type Policy } from "../config/mod.ts";
import {
  DEFINED_TWICE,
  LATER_USED,
  Registry,
  type ToolInfo,
  type ToolsetSource,
} from "../registry/mod.ts";

/** One breach of the tool contract. */
export interface CheckIssue {
  /** The plugin file. */
  file: string;
  /** The tool it concerns, when known. */
  tool?: string;
  /** What is wrong, one line. */
  message: string;
}

/** A tool that passed every check. */
export interface CheckedTool {
  file: string;
  name: string;
  permissions: string;
}

/** The outcome of {@link checkPlugins}. */
export interface CheckReport {
  /** The plugin files checked. */
  files: string[];
  /** Tools without any breach. */
  passed: CheckedTool[];
  /** Every breach found. */
  issues: CheckIssue[];
  /** True when there is no issue. */
  ok: boolean;
}

/** Options of {@link checkPlugins}. */
export interface CheckOptions {
  /** The workspace (default: the current directory). */
  workspace?: string;
  /** The policy (default: permissions.json of the workspace, else the shipped one). */
  policy?: Policy;
  /** Path of permissions.json. */
  policyFile?: string;
  /** `services` of corral.json: each plugin gets its own section. */
  services?: Record<string, unknown>;
  /** Also load the built-in toolsets, to catch names that clash with them (default true). */
  builtins?: boolean;
  /** Discovery cache directory (default: none). */
  cacheDir?: string | null;
}

const _LETTER_KIND: Record<Letter, "read" | "write" | "run" | "net"> = {
  r: "read",
  w: "write",
  x: "run",
  n: "net",
};

/**
 * Check plugin files (or directories of them). Each file is imported only in
 * its own sandbox, as at discovery.
 *
 * @example
 * ```ts ignore
 * import { checkPlugins, formatCheckReport } from "./check.ts";
 * const report = await checkPlugins(["plugins/text_tools.ts"]);
 * console.log(formatCheckReport(report));
 * ```
 */
export async function checkPlugins(
  paths: string[],
  options: CheckOptions = {},
): Promise<CheckReport> {
  const workspace = resolve(options.workspace ?? Deno.cwd());
  const policy = options.policy ?? await loadPolicy({ file: options.policyFile, workspace });
  const issues: CheckIssue[] = [];
  const passed: CheckedTool[] = [];
  const files: string[] = [];
  const entries = await _pluginEntries(paths, workspace, issues);

  const dirs = [...new Set(entries.map((e) => e.dir))];
  const labels = uniqueLabels(dirs);
  const sources: ToolsetSource[] = entries.map((e) => {
    const id = `plugin:${labels[dirs.indexOf(e.dir)]}/${e.stem}`;
    files.push(e.file);
    return {
      id,
      kind: "plugin",
      modules: [e.file],
      policy: policy.plugin(id, e.stem),
      config: options.services?.[e.stem],
    };
  });

  const registry = await Registry.create({
    workspace,
    policy,
    noBuiltins: options.builtins === false,
    sources,
    cacheDir: options.cacheDir ?? null,
    reporter: new Reporter({ quiet: true }),
  });
  try {
    for (const p of registry.problems) {
      if (!files.includes(p.source)) continue;
      issues.push({ file: p.source, tool: _toolOf(p.message), message: _strip(p.message) });
    }
    const all = registry.list();
    for (const t of all) {
      if (!files.includes(t.source)) continue;
      const found = _toolIssues(t, all, sources.find((s) => s.id === t.toolset)!);
      issues.push(...found);
      if (found.length === 0) {
        passed.push({ file: t.source, name: t.name, permissions: t.permissions });
      }
    }
  } finally {
    await registry.close();
  }
  const unique = issues.filter((x, i) =>
    issues.findIndex((y) => y.file === x.file && y.tool === x.tool && y.message === x.message) === i
  );
  return { files, passed, issues: unique, ok: unique.length === 0 };
}

/** The plugin files `paths` name (files, or folders of them); what is no plugin file is an issue. */
async function _pluginEntries(
  paths: string[],
  workspace: string,
  issues: CheckIssue[],
): Promise<Array<{ file: string; stem: string; dir: string }>> {
  const entries: Array<{ file: string; stem: string; dir: string }> = [];
  for (const p of paths) {
    const path = resolve(workspace, p);
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(path);
    } catch (err) {
      issues.push({ file: path, message: `cannot read it: ${(err as Error).message}` });
      continue;
    }
    const dir = info.isDirectory ? path : dirname(path);
    const scan = await scanPluginDir(dir);
    if (info.isDirectory) {
      for (const line of scan.rejected) issues.push({ file: path, message: line });
      for (const e of scan.entries) entries.push({ ...e, dir });
      continue;
    }
    const stem = basename(path, extname(path));
    const real = await Deno.realPath(path);
    const found = scan.entries.find((e) => e.file === real && e.stem === stem);
    if (found) entries.push({ ...found, dir });
    else {
      const why = scan.rejected.find((r) => r.includes(path));
      issues.push({
        file: path,
        message: why ??
          `not a plugin file (plugin files end in .ts, .js or .mjs and do not start with "_")`,
      });
    }
  }
  return entries;
}

function _toolIssues(t: ToolInfo, all: ToolInfo[], source: ToolsetSource): CheckIssue[] {
  const out: CheckIssue[] = [];
  const add = (message: string) => out.push({ file: t.source, tool: t.name, message });
  if (!TOOL_NAME_PATTERN.test(t.name)) add(`name does not match ${TOOL_NAME_PATTERN}`);
  if (t.description.trim() === "") add("description is missing or empty");
  const schema = t.inputSchema as { type?: unknown; properties?: unknown };
  if (
    schema?.type !== "object" ||
    (schema.properties !== undefined && typeof schema.properties !== "object")
  ) {
    add(`input schema is not a JSON Schema object (type is ${JSON.stringify(schema?.type)})`);
  }
  const others = all.filter((o) => o !== t && o.name === t.name);
  for (const o of others) {
    add(
      o.kind === "builtin"
        ? `name is duplicated: the built-in toolset "${o.toolset}" has a tool "${t.name}"`
        : o.source === t.source
        ? `name is duplicated: ${DEFINED_TWICE} ${t.source}; ${LATER_USED}`
        : all.indexOf(o) > all.indexOf(t)
        ? `name is duplicated: replaced by the one from ${o.source}`
        : `name is duplicated: replaces the one from ${o.source}`,
    );
  }
  for (const l of LETTERS) {
    if (!t.permissions.includes(l)) continue;
    const kind = _LETTER_KIND[l];
    if (source.policy[kind].length === 0) {
      add(
        `declares "${l}" (${
          LETTER_NAMES[l]
        }) but ${source.policy.where} grants no ${kind}; add "${kind}": [...] to "plugins": ` +
          `{ "${source.id.split("/").pop()}": {...} } in ${
            source.policy.file ?? "permissions.json"
          }`,
      );
    }
  }
  return out;
}

function _toolOf(message: string): string | undefined {
  const named = /Tool "([^"]*)"/.exec(message)?.[1];
  if (named !== undefined) return named;
  const raw = /tool name ("(?:[^"\\]|\\.)*"|\S+)/.exec(message)?.[1];
  if (raw === undefined) return undefined;
  try {
    return String(JSON.parse(raw));
  } catch {
    return raw;
  }
}

function _strip(message: string): string {
  // Messages start with the module's display path; the report groups by file.
  const at = message.indexOf(": ");
  return at >= 0 ? message.slice(at + 2) : message;
}

/** A human-readable report: one line per tool and per breach, then a summary. */
export function formatCheckReport(report: CheckReport, cwd: string = Deno.cwd()): string {
  const lines: string[] = [];
  const rel = (f: string) => f.startsWith(cwd + "/") ? f.slice(cwd.length + 1) : f;
  const files = [...new Set([...report.files, ...report.issues.map((i) => i.file)])];
  for (const file of files) {
    lines.push(rel(file));
    for (const t of report.passed.filter((p) => p.file === file)) {
      lines.push(`  ok    ${t.name} [${t.permissions || "-"}]`);
    }
    for (const i of report.issues.filter((x) => x.file === file)) {
      lines.push(`  FAIL  ${i.tool ? `${i.tool}: ` : ""}${i.message}`);
    }
  }
  const n = report.issues.length;
  lines.push(
    n === 0
      ? `\n${report.passed.length} tool(s) in ${report.files.length} file(s): all checks passed`
      : `\n${n} problem(s) in ${files.length} file(s); ${report.passed.length} tool(s) passed`,
  );
  return lines.join("\n");
}
