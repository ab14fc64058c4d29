import { z } from "zod";
import { BaseTool, tool } from "../../core/tool/mod.ts";
import { resolveInside } from "../../core/guard/mod.ts";
import { readChecked } from "./_read.ts";

/** Files larger than this are refused (read a smaller file or use SearchText). */
const _MAX_BYTES = 20_000_000;

const input = z.object({
  filepath: z.string().min(1).describe("Path of the text file to read, relative to the workspace"),
  start_line: z.number().int().min(1).default(1).describe(
    "First line to return, counting from 1",
  ),
  max_lines: z.number().int().min(1).optional().describe(
    "Return at most this many lines (default: up to the end of the file)",
  ),
});

/**
 * Read lines of a text file inside the workspace.
 *
 * Permissions: `r` (reads the file).
 *
 * @example
 * ```sh
 * deno run -A toolsets/files/read_file.ts README.md --start_line 1 --max_lines 20
 * ```
 */
@tool({
  permissions: "r",
  description: "Read a text file, or a range of its lines. Returns the lines and the " +
    "total number of lines in the file.",
  input,
})
export class ReadFile extends BaseTool {
  /** Read the lines. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const ctx = this.context!;
    const { filepath, start_line, max_lines } = args;
    this.reportStart(`Reading ${filepath}`, { end: "" });
    const real = await resolveInside(filepath, ctx.grant.read, ctx.workspace);
    const { bytes } = await readChecked(
      real,
      filepath,
      Math.min(_MAX_BYTES, ctx.maxReadBytes ?? Infinity),
    );
    const { text, encoding } = decodeText(bytes, filepath);
    const lines = _splitLines(text);
    const total = lines.length;
    if (start_line > Math.max(total, 1)) {
      throw new RangeError(
        `start_line ${start_line} is beyond the end of "${filepath}" (${total} line${
          total === 1 ? "" : "s"
        })`,
      );
    }
    const chosen = lines.slice(start_line - 1, max_lines ? start_line - 1 + max_lines : undefined);
    const end_line = start_line - 1 + chosen.length;
    this.reportResult(` ${chosen.length} of ${total} lines`);
    return {
      success: true,
      filepath,
      start_line,
      end_line,
      total_lines: total,
      content: chosen.join("\n"),
      more: end_line < total,
      encoding,
    };
  }
}

/**
 * The text of a file and its encoding: UTF-8 (with or without a byte-order
 * mark) or UTF-16 with a byte-order mark. Anything else (binary data, other
 * encodings) is refused with a clear message, never returned as mojibake.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeText } from "./read_file.ts";
 * assert.deepEqual(decodeText(new TextEncoder().encode("héllo"), "a"), { text: "héllo", encoding: "utf-8" });
 * assert.equal(decodeText(new Uint8Array([0xff, 0xfe, 0x68, 0]), "b").encoding, "utf-16le");
 * assert.throws(() => decodeText(new Uint8Array([0xc3, 0x28]), "c"), /not UTF-8 text/);
 * ```
 */
export function decodeText(bytes: Uint8Array, shown: string): { text: string; encoding: string } {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { text: _utf8(bytes.subarray(3), shown), encoding: "utf-8 (BOM)" };
  }
  if (bytes[0] === 0xff && bytes[1] === 0xfe) {
    return { text: new TextDecoder("utf-16le").decode(bytes.subarray(2)), encoding: "utf-16le" };
  }
  if (bytes[0] === 0xfe && bytes[1] === 0xff) {
    return { text: new TextDecoder("utf-16be").decode(bytes.subarray(2)), encoding: "utf-16be" };
  }
  if (bytes.subarray(0, 8192).includes(0)) {
    throw new Error(`file "${shown}" looks binary (it contains NUL bytes), not text`);
  }
  return { text: _utf8(bytes, shown), encoding: "utf-8" };
}

function _utf8(bytes: Uint8Array, shown: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new Error(
      `file "${shown}" is not UTF-8 text (binary data, or another encoding such as Latin-1)`,
    );
  }
}

function _splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(ReadFile);
