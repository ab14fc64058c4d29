import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { resolveInside } from "../../core/guard/mod.ts";
import { readChecked } from "./_read.ts";

const input = z.object({
  filepath: z.string().min(1).describe("Path of the file to count, relative to the workspace"),
});

/** Counts of a text. */
export interface Counts {
  /** Lines; a last line without a newline counts too. */
  lines: number;
  /** Runs of non-whitespace. */
  words: number;
  /** Unicode code points. */
  chars: number;
  /** Bytes of the file. */
  bytes: number;
}

/**
 * Count the lines, words, characters and bytes of a file, like `wc`.
 *
 * Permissions: `r`.
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/word_count.ts README.md --json
 * ```
 */
@tool({
  permissions: "r",
  description: "Count the lines, words, characters and bytes of a text file (like wc).",
  input,
})
export class WordCount extends BaseTool {
  /** Count. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { filepath } = args;
    this.reportStart(`Counting ${filepath}`, { end: "" });
    const real = await resolveInside(filepath, ctx.grant.read, ctx.workspace);
    const { bytes } = await readChecked(real, filepath, ctx.maxReadBytes);
    const counts = countText(bytes);
    this.reportResult(` ${counts.lines} lines, ${counts.words} words`);
    return { success: true, filepath, ...counts };
  }
}

/**
 * Count lines, words, characters and bytes of UTF-8 `bytes`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { countText } from "./word_count.ts";
 * const c = countText(new TextEncoder().encode("a b\nc"));
 * assert.ok(c.lines === 2 && c.words === 3 && c.chars === 5 && c.bytes === 5);
 * ```
 */
export function countText(bytes: Uint8Array): Counts {
  const text = new TextDecoder().decode(bytes);
  const newlines = text.split("\n").length - 1;
  return {
    lines: newlines + (text.length > 0 && !text.endsWith("\n") ? 1 : 0),
    words: text.split(/\s+/).filter((w) => w !== "").length,
    chars: [...text].length,
    bytes: bytes.length,
  };
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(WordCount);
