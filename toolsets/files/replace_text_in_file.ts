import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { assertNotPlanted, fsError, replaceFile, resolveInside } from "../../core/guard/mod.ts";
import { assertUnchanged, fileStamp, withFileLock } from "./_lock.ts";
import { readChecked } from "./_read.ts";

const input = z.object({
  filepath: z.string().min(1).describe("Path of the file to edit, relative to the workspace"),
  search: z.string().min(1).describe("Exact text to find (not a regular expression)"),
  replace: z.string().describe("Text to put in its place"),
  all: z.boolean().default(false).describe(
    "Replace every occurrence (default: only the first one)",
  ),
});

/**
 * Replace exact text in a file inside the workspace.
 *
 * Permissions: `rw` (reads the file, writes it back).
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/replace_text_in_file.ts notes.txt --search foo --replace bar --all
 * ```
 */
@tool({
  permissions: "rw",
  description: "Replace exact text in a file: the first occurrence, or all of them. " +
    "Fails when the text is not found.",
  input,
})
export class ReplaceTextInFile extends BaseTool {
  /** Edit the file. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { filepath } = args;
    this.reportStart(`Editing ${filepath}`, { end: "" });
    // The file must be both readable and writable for this tool.
    await resolveInside(filepath, ctx.grant.read, ctx.workspace);
    const real = await resolveInside(filepath, ctx.grant.write, ctx.workspace);
    assertNotPlanted(real, filepath, ctx);
    // Read, change, write as one step per file: concurrent edits are applied in turn.
    return await withFileLock(real, () => this.#edit(real, args));
  }

  async #edit(real: string, args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { filepath, search, replace, all } = args;
    const { bytes, info } = await readChecked(real, filepath, ctx.maxReadBytes);
    const stamp = fileStamp(info);
    const text = new TextDecoder().decode(bytes);
    const occurrences = text.split(search).length - 1;
    if (occurrences === 0) {
      const shown = search.length > 80 ? `${search.slice(0, 80)}…` : search;
      throw new Error(`text ${JSON.stringify(shown)} not found in "${filepath}"`);
    }
    let updated: string;
    if (all) {
      updated = text.split(search).join(replace);
    } else {
      const at = text.indexOf(search);
      updated = text.slice(0, at) + replace + text.slice(at + search.length);
    }
    await assertUnchanged(real, stamp, filepath);
    // Replaced, never written in place: a hard link to a file outside is broken, not written through.
    await replaceFile(real, new TextEncoder().encode(updated))
      .catch((err) => Promise.reject(fsError(err, filepath)));
    const replacements = all ? occurrences : 1;
    this.reportResult(` ${replacements} replaced`);
    return { success: true, filepath, search, replace, all, replacements, occurrences };
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) {
  await (await import("../../core/mod.ts")).runHarness(ReplaceTextInFile);
}
