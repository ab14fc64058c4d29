/**
 * Rich results: a tool result may carry `content_blocks` beside `success`,
 * MCP's content blocks as they are: text, image, audio, and embedded
 * resources. Class tools and module tools return them the same way:
 *
 * ```ts ignore
 * return { success: true, content_blocks: [{ type: "image", data: PNG_BASE64, mimeType: "image/png" }] };
 * ```
 *
 * They are checked in the sandbox (base64 data, MIME types, resource URIs),
 * counted in the result's size cap, sent to MCP clients as `content`, and
 * shown by the CLI as a summary instead of base64.
 *
 * @module
 */

/** One content block. */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | {
    type: "resource";
    resource: { uri: string; mimeType?: string; text?: string; blob?: string };
  };

const _BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const _MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(;.*)?$/i;

/**
 * The problems of a `content_blocks` value, one line each (empty: valid).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contentProblems } from "./content.ts";
 * assert.deepEqual(contentProblems([{ type: "text", text: "hi" }]), []);
 * assert.match(contentProblems([{ type: "image", data: "not base64!", mimeType: "image/png" }])[0], /base64/);
 * ```
 */
export function contentProblems(blocks: unknown): string[] {
  if (!Array.isArray(blocks)) return ["content_blocks must be an array of content blocks"];
  const problems: string[] = [];
  blocks.forEach((b, i) => {
    const at = `content_blocks[${i}]`;
    if (!b || typeof b !== "object") {
      problems.push(`${at} must be an object`);
      return;
    }
    const block = b as Record<string, unknown>;
    switch (block.type) {
      case "text":
        if (typeof block.text !== "string") problems.push(`${at}.text must be a string`);
        break;
      case "image":
      case "audio":
        if (typeof block.data !== "string" || !_BASE64.test(block.data) || block.data.length % 4) {
          problems.push(`${at}.data must be base64`);
        }
        if (typeof block.mimeType !== "string" || !_MIME.test(block.mimeType)) {
          problems.push(`${at}.mimeType must be a MIME type like ${block.type}/png`);
        } else if (!block.mimeType.startsWith(`${block.type}/`)) {
          problems.push(`${at}.mimeType "${block.mimeType}" is not an ${block.type} type`);
        }
        break;
      case "resource": {
        const r = block.resource as Record<string, unknown> | undefined;
        if (!r || typeof r !== "object") {
          problems.push(`${at}.resource must be an object`);
          break;
        }
        try {
          new URL(String(r.uri));
        } catch {
          problems.push(`${at}.resource.uri must be a URI`);
        }
        if (
          r.mimeType !== undefined && (typeof r.mimeType !== "string" || !_MIME.test(r.mimeType))
        ) {
          problems.push(`${at}.resource.mimeType must be a MIME type`);
        }
        const text = typeof r.text === "string";
        const blob = typeof r.blob === "string" && _BASE64.test(r.blob);
        if (text === blob) problems.push(`${at}.resource needs either text or base64 blob`);
        break;
      }
      default:
        problems.push(`${at}.type must be text, image, audio or resource`);
    }
  });
  return problems;
}

/**
 * The MCP `content` of a result: its blocks, or (without any) the result
 * as JSON text (`text`, or a function that makes it, called only then).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpContent } from "./content.ts";
 * const r = { success: true, content_blocks: [{ type: "text", text: "hi" }] };
 * assert.deepEqual(mcpContent(r, "{}"), [{ type: "text", text: "hi" }]);
 * assert.deepEqual(mcpContent({ success: true }, "{}"), [{ type: "text", text: "{}" }]);
 * ```
 */
export function mcpContent(
  result: Record<string, unknown>,
  text: string | (() => string),
): ContentBlock[] {
  const blocks = result.content_blocks;
  if (Array.isArray(blocks) && blocks.length && contentProblems(blocks).length === 0) {
    return blocks as ContentBlock[];
  }
  // `text` may be a function: the JSON is only made when there are no blocks to send.
  return [{ type: "text", text: typeof text === "function" ? text() : text }];
}

/**
 * A copy of a result for a terminal: base64 data of content blocks replaced
 * by a short summary.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summarizeContent } from "./content.ts";
 * const r = summarizeContent({ success: true, content_blocks: [{ type: "image", data: "AAAA", mimeType: "image/png" }] });
 * assert.match(JSON.stringify(r), /image\/png, 3 bytes, not shown/);
 * ```
 */
export function summarizeContent<T extends Record<string, unknown>>(result: T): T {
  const blocks = result.content_blocks;
  if (!Array.isArray(blocks)) return result;
  const shown = (b64: string, mime: string) =>
    `<${mime}, ${
      Math.floor((b64.length * 3) / 4) - (b64.match(/=+$/)?.[0].length ?? 0)
    } bytes, not shown>`;
  return {
    ...result,
    content_blocks: blocks.map((b) => {
      const block = b as Record<string, unknown>;
      if ((block.type === "image" || block.type === "audio") && typeof block.data === "string") {
        return { ...block, data: shown(block.data, String(block.mimeType)) };
      }
      const r = block.resource as Record<string, unknown> | undefined;
      if (block.type === "resource" && typeof r?.blob === "string") {
        return { ...block, resource: { ...r, blob: shown(r.blob, String(r.mimeType)) } };
      }
      return block;
    }),
  };
}

/**
 * A result as the content of a tool-result message of another API:
 * Anthropic's blocks (text and base64 images), or OpenAI's text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { apiContent } from "./content.ts";
 * const r = { success: true, content_blocks: [{ type: "image", data: "AAAA", mimeType: "image/png" }] };
 * const a = apiContent(r, "anthropic") as Array<{ type: string }>;
 * assert.equal(a[0].type, "image");
 * assert.equal(typeof apiContent(r, "openai"), "string");
 * ```
 */
export function apiContent(
  result: Record<string, unknown>,
  format: "openai" | "anthropic",
): string | Array<Record<string, unknown>> {
  const blocks = Array.isArray(result.content_blocks)
    ? result.content_blocks as ContentBlock[]
    : [];
  if (format === "openai" || blocks.length === 0) {
    return JSON.stringify(summarizeContent(result));
  }
  return blocks.map((b) => {
    if (b.type === "image") {
      return { type: "image", source: { type: "base64", media_type: b.mimeType, data: b.data } };
    }
    if (b.type === "text") return { type: "text", text: b.text };
    const summary = (summarizeContent({ content_blocks: [b] }).content_blocks as unknown[])[0];
    return { type: "text", text: JSON.stringify(summary) };
  });
}
