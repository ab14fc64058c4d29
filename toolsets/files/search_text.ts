import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { fsError, resolveInside } from "../../core/guard/mod.ts";
import { readChecked } from "./_read.ts";
import { SKIPPED_DIRS, walkFolder } from "./_walk.ts";

/** Files larger than this are skipped. */
export const MAX_SEARCH_FILE_BYTES = 2_000_000;
/** Folders never searched. */

/** Longest line text returned per match. */
const _MAX_LINE_CHARS = 300;

const input = z.object({
  pattern: z.string().min(1).describe("JavaScript regular expression to look for, line by line"),
  path: z.string().min(1).default(".").describe(
    "File or folder to search, relative to the workspace (folders are searched recursively)",
  ),
  ignore_case: z.boolean().default(false).describe("Match letters regardless of case"),
  max_results: z.number().int().min(1).max(10_000).default(100).describe(
    "Stop after this many matching lines",
  ),
});

/** One matching line. */
export interface SearchMatch {
  /** The file, as the given path plus the name below it. */
  file: string;
  /** Line number, from 1. */
  line: number;
  /** The line (cut at 300 characters). */
  text: string;
}

/**
 * Search files for lines matching a regular expression, like `grep -rn`.
 * Binary files, files over 2 MB, `.git` and `node_modules` are skipped;
 * symbolic links met on the way are not followed.
 *
 * Permissions: `r`.
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/search_text.ts "TODO|FIXME" --path core
 * ```
 */
@tool({
  permissions: "r",
  description: "Search text files for lines matching a regular expression. Returns the file, " +
    "line number and text of each match. Skips binary files, files over 2 MB, .git and " +
    "node_modules.",
  input,
})
export class SearchText extends BaseTool {
  /** Search. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { pattern, path, ignore_case, max_results } = args;
    let regex: RegExp;
    try {
      regex = new RegExp(pattern, ignore_case ? "i" : "");
    } catch (err) {
      throw new SyntaxError(
        `invalid pattern ${JSON.stringify(pattern)}: ${(err as Error).message}`,
      );
    }
    this.reportStart(`Searching ${path} for /${pattern}/`, { end: "" });
    const real = await resolveInside(path, ctx.grant.read, ctx.workspace, { what: "path" });
    const top = await Deno.stat(real).catch((err) => Promise.reject(fsError(err, path, "path")));

    const matches: SearchMatch[] = [];
    const skipped = { binary: 0, large: 0, unreadable: 0 };
    let filesSearched = 0;
    let truncated = false;

    const searchFile = async (file: string, shown: string, size: number): Promise<boolean> => {
      const cap = Math.min(MAX_SEARCH_FILE_BYTES, ctx.maxReadBytes ?? Infinity);
      if (size > cap) {
        skipped.large++;
        return true;
      }
      let bytes: Uint8Array;
      try {
        // Regular files only, checked on the opened file; never more than the cap.
        bytes = (await readChecked(file, shown, cap)).bytes;
      } catch (err) {
        if (/too large/.test((err as Error).message)) skipped.large++;
        else skipped.unreadable++;
        return true;
      }
      if (bytes.subarray(0, 8192).includes(0)) {
        skipped.binary++;
        return true;
      }
      filesSearched++;
      const lines = new TextDecoder().decode(bytes).split(/\r?\n/);
      if (lines.at(-1) === "") lines.pop();
      for (let i = 0; i < lines.length; i++) {
        if (!regex.test(lines[i])) continue;
        if (matches.length >= max_results) {
          truncated = true;
          return false;
        }
        const text = lines[i].length > _MAX_LINE_CHARS
          ? `${lines[i].slice(0, _MAX_LINE_CHARS)}…`
          : lines[i];
        matches.push({ file: shown, line: i + 1, text });
      }
      return true;
    };

    if (top.isFile) {
      await searchFile(real, path, top.size);
    } else if (top.isDirectory) {
      const walk = walkFolder(real, path, {
        descend: (e) => !SKIPPED_DIRS.has(e.name),
        onUnreadable: () => skipped.unreadable++,
        signal: this.signal,
      });
      for await (const { entry, full, shown } of walk) {
        if (!entry.isFile) continue;
        const size = (await Deno.lstat(full).catch(() => null))?.size ?? 0;
        if (!(await searchFile(full, shown, size))) break;
      }
    } else {
      throw new Error(`"${path}" is neither a file nor a folder`);
    }
    this.reportResult(` ${matches.length} matches in ${filesSearched} files`);
    return {
      success: true,
      pattern,
      path,
      ignore_case,
      count: matches.length,
      truncated,
      files_searched: filesSearched,
      skipped,
      matches,
    };
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(SearchText);
