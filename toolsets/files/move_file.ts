import { dirname } from "node:path";
import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { assertNotPlanted, fsError, resolveInside } from "../../core/guard/mod.ts";

const input = z.object({
  source: z.string().min(1).describe(
    "Path of the file or folder to move, relative to the workspace",
  ),
  destination: z.string().min(1).describe(
    "New path, relative to the workspace; missing parent folders are created",
  ),
  overwrite: z.boolean().default(false).describe(
    "Replace an existing destination file (otherwise an existing destination is an error)",
  ),
});

/**
 * Move or rename a file or folder inside the workspace.
 *
 * Permissions: `rw` (`w` for both ends; `r` to resolve the paths and check
 * whether the destination exists).
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/move_file.ts --source a.txt --destination old/a.txt
 * ```
 */
@tool({
  confirmWhen: "overwrite",
  permissions: "rw",
  description: "Move or rename a file or folder. Creates missing parent folders of the " +
    "destination; refuses to replace an existing destination unless overwrite is true.",
  input,
})
export class MoveFile extends BaseTool {
  /** Rename the file. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { source, destination, overwrite } = args;
    this.reportStart(`Moving ${source} to ${destination}`, { end: "" });
    // noFollow: a symlink is moved itself; its target is not touched.
    const from = await resolveInside(source, ctx.grant.write, ctx.workspace, { noFollow: true });
    const to = await resolveInside(destination, ctx.grant.write, ctx.workspace, {
      noFollow: true,
      create: true,
    });
    assertNotPlanted(from, source, ctx);
    assertNotPlanted(to, destination, ctx);
    if (from === to) throw new Error(`source and destination are the same path`);
    const existing = await Deno.lstat(to).catch((err) =>
      err instanceof Deno.errors.NotFound ? null : Promise.reject(fsError(err, destination))
    );
    if (existing?.isDirectory) {
      throw new Error(`destination "${destination}" is an existing folder`);
    }
    if (existing && !overwrite) {
      throw new Error(
        `destination "${destination}" already exists (set overwrite to true to replace it)`,
      );
    }
    try {
      await Deno.mkdir(dirname(to), { recursive: true });
    } catch (err) {
      throw fsError(err, dirname(destination), "folder");
    }
    await Deno.rename(from, to).catch((err) => Promise.reject(fsError(err, source)));
    this.reportResult(" done");
    return { success: true, source, destination, overwritten: existing !== null };
  }
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(MoveFile);
