import { relative } from "node:path";
import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { fsError, resolveInside } from "../../core/guard/mod.ts";
import { SKIPPED_DIRS, walkFolder } from "./_walk.ts";

const input = z.object({
  path: z.string().min(1).default(".").describe(
    "Folder to list, relative to the workspace (default: the workspace itself)",
  ),
  recursive: z.boolean().default(false).describe(
    "Also list the contents of sub-folders (symbolic links are listed, never followed; " +
      ".git and node_modules are listed but not entered, as SearchText skips them)",
  ),
  max_results: z.number().int().min(1).max(10_000).default(200).describe(
    "Stop after this many entries",
  ),
  pattern: z.string().min(1).optional().describe(
    'Only entries matching this glob: without "/" it matches the name ("*.ts"), with "/" the ' +
      'path inside the folder ("src/**/*.ts")',
  ),
});

/** One listed entry. */
export interface ListEntry {
  /** Path as given plus the entry's name. */
  path: string;
  /** What it is; a symlink is reported as such, not followed. */
  type: "file" | "directory" | "symlink" | "other";
}

/**
 * List the files and folders of a folder inside the workspace.
 *
 * Permissions: `r`.
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/list_files.ts --path core --recursive
 * ```
 */
@tool({
  permissions: "r",
  description: "List the files and folders in a folder, optionally recursively, with the " +
    "type of each entry (file, directory, symlink). Symbolic links are never followed.",
  input,
})
export class ListFiles extends BaseTool {
  /** List the entries. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { path, recursive, max_results, pattern } = args;
    this.reportStart(`Listing ${path}`, { end: "" });
    const real = await resolveInside(path, ctx.grant.read, ctx.workspace, { what: "folder" });
    const info = await Deno.stat(real).catch((err) => Promise.reject(fsError(err, path)));
    if (!info.isDirectory) throw new Error(`"${path}" is not a folder`);

    // picomatch: node:path's matchesGlob reads the environment, which a sandbox may not.
    // Loaded on use: picomatch is CommonJS, and the first CommonJS module starts Deno's
    // CommonJS loader (about 45 ms), which every other tool of this sandbox would pay.
    const match = pattern === undefined
      ? undefined
      : (await import("picomatch")).default(pattern, { dot: true });
    const entries: ListEntry[] = [];
    let truncated = false;
    for await (
      const { entry, shown, full } of walkFolder(real, path, {
        descend: (e) => recursive && !SKIPPED_DIRS.has(e.name),
        signal: this.signal,
      })
    ) {
      if (match) {
        const subject = pattern!.includes("/") ? relative(real, full) : entry.name;
        if (!match(subject)) continue;
      }
      if (entries.length >= max_results) {
        truncated = true;
        break;
      }
      const type = entry.isSymlink
        ? "symlink"
        : entry.isDirectory
        ? "directory"
        : entry.isFile
        ? "file"
        : "other";
      entries.push({ path: shown, type });
    }
    this.reportResult(` ${entries.length} entries${truncated ? " (truncated)" : ""}`);
    return {
      success: true,
      path,
      recursive,
      ...(pattern !== undefined ? { pattern } : {}),
      count: entries.length,
      truncated,
      entries,
    };
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(ListFiles);
