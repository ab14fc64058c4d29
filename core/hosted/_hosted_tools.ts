/**
 * A hosted server's tools as corral tools: their names (prefixed with
 * `<server>_` when they collide, never a built-in's name, at most 64
 * characters of `[a-zA-Z0-9_-]`), the allow and deny lists, confirmation
 * from the annotations (not read-only and not marked non-destructive, as
 * MCP's defaults read, unless the operator says otherwise per tool), and approval (a changed definition is not
 * offered); and their results as corral results.
 *
 * @module
 */
import type { ServerEntry } from "../config/mod.ts";
import type { ToolMeta } from "../sandbox/mod.ts";
import { capResult, contentProblems, failure, type ToolResult, withFault } from "../tool/mod.ts";
import { changedFields, type ToolDefinition } from "./approvals.ts";

/** The longest tool name offered. */
export const MAX_TOOL_NAME = 64;
const _NAME = /^[a-zA-Z0-9_-]+$/;

/** One server tool as offered: corral's name for it and its meta. */
export interface HostedTool {
  /** The name corral offers. */
  name: string;
  /** The server's own name for it. */
  serverName: string;
  meta: ToolMeta;
}

/**
 * corral's name for a server tool: its own when free and well-formed, else
 * `<server>_<name>` (bad characters become `_`, cut to 64 characters).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offeredName } from "./_hosted_tools.ts";
 * assert.equal(offeredName("fs", "read_file", () => false), "read_file");
 * assert.equal(offeredName("fs", "ReadFile", (n) => n === "ReadFile"), "fs_ReadFile");
 * assert.equal(offeredName("fs", "a.b c", () => false), "fs_a_b_c");
 * ```
 */
export function offeredName(server: string, name: string, taken: (n: string) => boolean): string {
  if (_NAME.test(name) && name.length <= MAX_TOOL_NAME && !taken(name)) return name;
  const base = `${server}_${name.replace(/[^a-zA-Z0-9_-]/g, "_")}`.slice(0, MAX_TOOL_NAME);
  if (!taken(base)) return base;
  for (let i = 2;; i++) {
    const n = `${base.slice(0, MAX_TOOL_NAME - String(i).length - 1)}_${i}`;
    if (!taken(n)) return n;
  }
}

/**
 * The tools of `entry` to register: the approved definitions (or, for a
 * tool whose definition changed, the approved one marked not offered with
 * the fields that changed), filtered by the allow and deny lists.
 */
export function hostedTools(
  entry: ServerEntry,
  letters: string,
  approved: ToolDefinition[],
  seen: ToolDefinition[] | undefined,
  taken: (name: string) => boolean,
): HostedTool[] {
  const out: HostedTool[] = [];
  const used = new Set<string>();
  const byName = new Map(approved.map((t) => [t.name, t]));
  const list = seen ?? approved;
  for (const t of list) {
    if (entry.allow && !entry.allow.includes(t.name)) continue;
    if (entry.deny.includes(t.name)) continue;
    const name = offeredName(entry.name, t.name, (n) => taken(n) || used.has(n));
    used.add(name);
    const fields = seen ? changedFields(t, byName.get(t.name)) : [];
    const shown = byName.get(t.name) ?? t;
    const a = (shown.annotations ?? {}) as Record<string, unknown>;
    // MCP's defaults: a tool not marked read-only may be destructive unless it says it is not.
    const destructive = a.readOnlyHint !== true && a.destructiveHint !== false;
    const load = fields.length === 0 ? { load: true as const } : {
      load: false as const,
      reason: fields[0] === "new"
        ? `a new tool of server "${entry.name}", not approved yet: corral servers approve ` +
          entry.name
        : `its definition changed since it was approved (${fields.join(", ")}): review it ` +
          `and run corral servers approve ${entry.name}`,
    };
    out.push({
      name,
      serverName: t.name,
      meta: {
        name,
        description: shown.description ?? "",
        permissions: letters,
        confirm: entry.confirm[t.name] ?? destructive,
        style: "module",
        inputSchema: shown.inputSchema ?? { type: "object", properties: {} },
        ...(shown.annotations ? { annotations: shown.annotations } : {}),
        ...(shown.outputSchema ? { outputSchema: shown.outputSchema } : {}),
        ...(shown.icons ? { icons: shown.icons } : {}),
        // corral runs a hosted call as a task of its own; one the server runs only as
        // its task (2025-11-25 `required`) corral cannot call (./call_lane.ts).
        ...(shown.execution?.taskSupport === "optional" ? { taskSupport: "optional" } : {}),
        load,
      } as ToolMeta,
    });
  }
  return out;
}

/**
 * A server's `tools/call` result (its shape checked by ./call_lane.ts) as a
 * corral result: `success` is not `isError`; `structuredContent` is the
 * `result`; the content blocks are checked like a sandbox's and kept with
 * only the members MCP defines; the whole is capped.
 */
export function hostedResult(
  tool: string,
  raw: Record<string, unknown>,
  maxBytes: number,
): ToolResult {
  // resource_link and other blocks corral does not check travel as text.
  const blocks = (Array.isArray(raw.content) ? raw.content : []).map((b) =>
    ["text", "image", "audio", "resource"].includes(b?.type)
      ? _known(b)
      : { type: "text", text: JSON.stringify(b) }
  );
  const problems = contentProblems(blocks);
  if (problems.length) {
    const broken = failure(tool, "the server sent invalid content", { problems });
    return withFault(broken, "error", "bad_result");
  }
  const text = blocks.filter((b) => b?.type === "text").map((b) => String(b.text)).join("\n");
  const result: ToolResult = { success: raw.isError !== true };
  if (raw.isError === true) result.error = text || "the server reported an error";
  if (raw.structuredContent && typeof raw.structuredContent === "object") {
    result.result = raw.structuredContent;
  } else if (text && raw.isError !== true) result.result = text;
  result.content_blocks = blocks;
  return capResult(result, maxBytes);
}

const _BLOCK_KEYS: Record<string, string[]> = {
  text: ["type", "text"],
  image: ["type", "data", "mimeType"],
  audio: ["type", "data", "mimeType"],
  resource: ["type", "resource"],
};

/**
 * A checked block with only the members MCP defines for its type (as the
 * SDK's parse kept them): `annotations` with its three hints when well-typed,
 * `_meta` when an object; a resource's contents likewise.
 */
function _known(b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of _BLOCK_KEYS[b.type as string]) if (b[k] !== undefined) out[k] = b[k];
  const r = b.resource;
  if (b.type === "resource" && r && typeof r === "object" && !Array.isArray(r)) {
    const c = r as Record<string, unknown>;
    out.resource = Object.fromEntries(
      ["uri", "mimeType", "text", "blob", "_meta"].filter((k) => c[k] !== undefined).map((
        k,
      ) => [k, c[k]]),
    );
  }
  const a = b.annotations as Record<string, unknown> | undefined;
  if (a && typeof a === "object" && !Array.isArray(a)) {
    const kept: Record<string, unknown> = {};
    if (Array.isArray(a.audience) && a.audience.every((x) => x === "user" || x === "assistant")) {
      kept.audience = a.audience;
    }
    if (typeof a.priority === "number" && a.priority >= 0 && a.priority <= 1) {
      kept.priority = a.priority;
    }
    if (typeof a.lastModified === "string") kept.lastModified = a.lastModified;
    out.annotations = kept;
  }
  if (b._meta && typeof b._meta === "object" && !Array.isArray(b._meta)) out._meta = b._meta;
  return out;
}
