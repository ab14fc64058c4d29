/**
 * What the host accepts from a sandbox as a module's description. A
 * sandbox is untrusted: code that bends its own realm can make it send
 * anything, so every description is checked here before the catalog or
 * the discovery cache sees it, and only for the modules that were asked.
 *
 * @module
 */
import { z } from "zod";
import type { ModuleMeta } from "./protocol.ts";

const _text = z.string().max(1_000_000);
const _tool = z.object({
  name: z.string().min(1).max(200),
  description: _text,
  permissions: z.string().regex(/^r?w?x?n?$/),
  confirm: z.boolean(),
  confirmWhen: z.string().max(200).optional(),
  commands: z.array(z.string().max(4096)).max(1000).optional(),
  taskSupport: z.enum(["optional", "required", "forbidden"]).optional(),
  taskAfterInput: z.literal(true).optional(),
  style: z.enum(["class", "module"]),
  inputSchema: z.record(z.unknown()),
  load: z.union([
    z.object({ load: z.literal(true) }),
    z.object({ load: z.literal(false), reason: _text }),
  ]),
}).strict();
const _meta = z.object({
  module: z.string(),
  tools: z.array(_tool).max(10_000),
  problems: z.array(_text).max(10_000),
  error: _text.optional(),
  notConfigured: z.boolean().optional(),
}).strict();

/** The error of a module whose sandbox answered something else than a description. */
export const MALFORMED = "its sandbox sent a malformed description";

/**
 * One checked description per module asked for, in the order asked: a
 * module missing from `metas`, or described in a malformed way, gets an
 * `error` (a failure of the sandbox, never remembered by the cache);
 * descriptions of modules that were not asked for are dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { acceptMetas, MALFORMED } from "./_module_meta.ts";
 * const good = { module: "/p/a.ts", tools: [], problems: [] };
 * const forged = { module: "/p/b.ts", tools: [], problems: [] };
 * const [a] = acceptMetas(["/p/a.ts"], [forged, good]);
 * assert.deepEqual(a, good);
 * const [bad] = acceptMetas(["/p/a.ts"], [{ ...good, tools: [{ permissions: 5 }] }]);
 * assert.match(bad.error!, new RegExp(MALFORMED));
 * ```
 */
export function acceptMetas(asked: string[], metas: unknown): ModuleMeta[] {
  const given = new Map<string, unknown>();
  if (Array.isArray(metas)) {
    for (const m of metas) {
      const module = (m as { module?: unknown } | null)?.module;
      if (typeof module === "string" && asked.includes(module) && !given.has(module)) {
        given.set(module, m);
      }
    }
  }
  return asked.map((module) => {
    const parsed = _meta.safeParse(given.get(module));
    if (parsed.success) return parsed.data as ModuleMeta;
    const why = given.has(module)
      ? `${MALFORMED} (${parsed.error.issues[0]?.path.join(".") || "module"}: ${
        parsed.error.issues[0]?.message ?? "invalid"
      })`
      : "no answer from its sandbox";
    return { module, tools: [], problems: [], error: why };
  });
}
