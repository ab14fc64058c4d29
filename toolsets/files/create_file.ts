import { dirname } from "node:path";
import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { assertNotPlanted, fsError, replaceFile, resolveInside } from "../../core/guard/mod.ts";

const input = z.object({
  filepath: z.string().min(1).describe("Path of the file to create, relative to the workspace"),
  content: z.string().describe("Text to write into the file"),
  overwrite: z.boolean().default(false).describe(
    "Replace the file if it already exists (otherwise an existing file is an error)",
  ),
});

/**
 * Create a text file inside the workspace, with its parent folders.
 *
 * Permissions: `rw` (`w` to write; `r` because it resolves the path and
 * checks whether the file already exists).
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/create_file.ts notes/todo.txt --content "buy milk"
 * ```
 */
@tool({
  confirmWhen: "overwrite",
  permissions: "rw",
  description: "Create a text file (and its parent folders). Refuses to replace an existing " +
    "file unless overwrite is true.",
  input,
})
export class CreateFile extends BaseTool {
  /** Write the file. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { filepath, content, overwrite } = args;
    this.reportStart(`Creating ${filepath}`, { end: "" });
    const real = await resolveInside(filepath, ctx.grant.write, ctx.workspace, { create: true });
    assertNotPlanted(real, filepath, ctx);
    const info = await _statOrNull(real, filepath);
    if (info?.isDirectory) throw new Error(`"${filepath}" is a directory`);
    if (info && !info.isFile) {
      throw new Error(
        `"${filepath}" is not a regular file (a FIFO, socket or device): the files tools write ` +
          `regular files only`,
      );
    }
    if (info && !overwrite) {
      throw new Error(`file "${filepath}" already exists (set overwrite to true to replace it)`);
    }
    const bytes = new TextEncoder().encode(content);
    try {
      await Deno.mkdir(dirname(real), { recursive: true });
      // Replaced, never written in place (a hard link is broken); createNew closes the gap
      // between the check above and the write.
      await replaceFile(real, bytes, { createNew: !overwrite });
    } catch (err) {
      throw fsError(err, filepath);
    }
    this.reportResult(` ${bytes.length} bytes`);
    return { success: true, filepath, bytes_written: bytes.length, overwritten: info !== null };
  }
}

async function _statOrNull(real: string, given: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(real);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw fsError(err, given);
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(CreateFile);
