/**
 * The policy keys that bound one call: its arguments (nesting, size) and
 * its questions to the client (count, at once, bytes). Optional in every
 * entry and in `defaults`; absent, the defaults of core/tool/arg_limits.ts
 * and core/sandbox/ask_budget.ts apply.
 *
 * @module
 */
import { z } from "zod";

/** The zod shape of the keys (spread into the policy's sandbox entry schema). */
export const CALL_LIMIT_KEYS = {
  max_arg_depth: z.number().int().min(2).max(1000).optional().describe(
    "Arguments nested deeper than this are refused before the tool runs (default 64)",
  ),
  max_arg_bytes: z.number().int().min(1024).max(1_073_741_824).optional().describe(
    "Arguments larger than this as JSON are refused before the tool runs (default 4 MiB)",
  ),
  max_asks: z.number().int().min(0).max(10_000).optional().describe(
    "Sampling and elicitation requests one call may send its client (default 20)",
  ),
  max_asks_at_once: z.number().int().min(1).max(100).optional().describe(
    "Requests of one call open at once (default 2)",
  ),
  max_ask_bytes: z.number().int().min(1024).max(1_073_741_824).optional().describe(
    "Bytes of requests and answers in one call, as JSON (default 4 MiB)",
  ),
};

/** The resolved keys of one entry: only those the entry or `defaults` set. */
export type CallLimits = Partial<Record<keyof typeof CALL_LIMIT_KEYS, number>>;

/**
 * The call limits `entry` sets, else those `defaults` sets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callLimits } from "./_call_limits.ts";
 * assert.deepEqual(callLimits({ max_asks: 3 }, { max_asks: 9, max_arg_depth: 8 }), { max_arg_depth: 8, max_asks: 3 });
 * ```
 */
export function callLimits(entry: CallLimits | undefined, defaults: CallLimits): CallLimits {
  const out: CallLimits = {};
  for (const k of Object.keys(CALL_LIMIT_KEYS) as Array<keyof typeof CALL_LIMIT_KEYS>) {
    const v = entry?.[k] ?? defaults[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
