/**
 * The policy keys that bound a sandbox's write layer (core/layers/): how
 * many entries and bytes it may hold before its changes are no longer
 * applied, and whether a layer past them is applied in part. Optional in
 * every entry of `permissions.json` and in `defaults`; absent, the
 * defaults of {@link DEFAULT_LAYER_LIMITS} apply.
 *
 * @module
 */
import { z } from "zod";

/** The limits where permissions.json says nothing. */
export const DEFAULT_LAYER_LIMITS = {
  layer_max_entries: 100_000,
  layer_max_bytes: 4 * 1024 ** 3,
} as const;

/** The zod shape of the keys (spread into the policy's sandbox entry schema). */
export const LAYER_LIMIT_KEYS = {
  layer_max_entries: z.number().int().min(1).max(100_000_000).optional().describe(
    "Files, folders and links one sandbox's write layer may hold; past it, its changes are " +
      "not applied and the call fails (default 100000)",
  ),
  layer_max_bytes: z.number().int().min(0).max(2 ** 50).optional().describe(
    "Bytes of files one sandbox's write layer may hold (default 4 GiB)",
  ),
  layer_partial: z.boolean().optional().describe(
    "Past the layer's limits, apply what fits (in the order the layer is read) instead of " +
      "nothing (default false)",
  ),
};

/** The resolved keys of one entry. */
export interface LayerLimits {
  layer_max_entries: number;
  layer_max_bytes: number;
  /** Set only when the operator chose partial applies. */
  layer_partial?: boolean;
}

/**
 * The layer limits `entry` sets, else those `defaults` sets (only those
 * set: core/layers/layer_quota.ts fills in {@link DEFAULT_LAYER_LIMITS}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layerLimits } from "./layer_limits.ts";
 * assert.deepEqual(layerLimits({ layer_max_entries: 10 }, { layer_partial: true }), {
 *   layer_max_entries: 10, layer_partial: true,
 * });
 * assert.deepEqual(layerLimits(undefined, {}), {});
 * ```
 */
export function layerLimits(
  entry: Partial<LayerLimits> | undefined,
  defaults: Partial<LayerLimits>,
): Partial<LayerLimits> {
  const out: Partial<LayerLimits> = {};
  const entries = entry?.layer_max_entries ?? defaults.layer_max_entries;
  const bytes = entry?.layer_max_bytes ?? defaults.layer_max_bytes;
  if (entries !== undefined) out.layer_max_entries = entries;
  if (bytes !== undefined) out.layer_max_bytes = bytes;
  if (entry?.layer_partial ?? defaults.layer_partial) out.layer_partial = true;
  return out;
}
