import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { assertNotPlanted, fsError, resolveInside } from "../../core/guard/mod.ts";

const input = z.object({
  filepath: z.string().min(1).describe(
    "Path of the file to delete, relative to the workspace (a symbolic link is removed " +
      "itself, not what it points to)",
  ),
});

/**
 * Delete one file (or symbolic link) inside the workspace. Folders are
 * refused. Calls ask for a person's confirmation.
 *
 * Permissions: `rw` (`w` to remove; `r` to resolve the path and check what
 * it is).
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/delete_file.ts old.txt
 * ```
 */
@tool({
  permissions: "rw",
  confirm: true,
  description: "Delete a file. Folders are refused; a symbolic link is removed itself.",
  input,
})
export class DeleteFile extends BaseTool {
  /** Remove the file. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { filepath } = args;
    this.reportStart(`Deleting ${filepath}`, { end: "" });
    const real = await resolveInside(filepath, ctx.grant.write, ctx.workspace, { noFollow: true });
    assertNotPlanted(real, filepath, ctx);
    const info = await Deno.lstat(real).catch((err) => Promise.reject(fsError(err, filepath)));
    if (info.isDirectory) throw new Error(`"${filepath}" is a folder; only files can be deleted`);
    await Deno.remove(real).catch((err) => Promise.reject(fsError(err, filepath)));
    this.reportResult(" done");
    return { success: true, filepath, deleted: true };
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(DeleteFile);
