/**
 * A sandbox's write layer is bounded: the entries (files, folders, links,
 * removals) and the bytes of files it holds since the sandbox started,
 * counted each time it is settled. A layer past either bound is not
 * applied at all (nothing of the call's changes reaches the tree) and the
 * call fails naming the bound and where it is set; the sandbox starts
 * afresh before its next call. With `layer_partial` (an operator's
 * choice), what fits is applied, in the order the layer is read (parents
 * before children), and the rest is refused by name.
 *
 * The bounds come from `permissions.json` (core/config/layer_limits.ts).
 *
 * @module
 */
import { DEFAULT_LAYER_LIMITS, type LayerLimits } from "../config/mod.ts";

/** The bounds of one sandbox's layers, and where they are set (for messages). */
export interface LayerQuota {
  entries: number;
  bytes: number;
  /** Apply what fits rather than nothing. */
  partial: boolean;
  /** The policy entry they come from (`toolsets.system`), when known. */
  where?: string;
}

/**
 * The quota of a sandbox whose policy is `p` (corral's defaults for what
 * it leaves out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layerQuota } from "./layer_quota.ts";
 * assert.deepEqual(layerQuota({ layer_max_entries: 5, where: "toolsets.system" }), {
 *   entries: 5, bytes: 4 * 1024 ** 3, partial: false, where: "toolsets.system",
 * });
 * ```
 */
export function layerQuota(p: Partial<LayerLimits> & { where?: string } = {}): LayerQuota {
  return {
    entries: p.layer_max_entries ?? DEFAULT_LAYER_LIMITS.layer_max_entries,
    bytes: p.layer_max_bytes ?? DEFAULT_LAYER_LIMITS.layer_max_bytes,
    partial: p.layer_partial ?? false,
    ...(p.where ? { where: p.where } : {}),
  };
}

/** A running count of a layer's entries and bytes against its quota. */
export class QuotaCount {
  entries = 0;
  bytes = 0;
  /** The first bound passed (set once). */
  over: "entries" | "bytes" | undefined;
  readonly quota: LayerQuota;

  constructor(quota: LayerQuota) {
    this.quota = quota;
  }

  /**
   * Count one entry (`size` bytes for a file); whether the layer is past
   * its quota now.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { layerQuota, QuotaCount } from "./layer_quota.ts";
   * const c = new QuotaCount(layerQuota({ layer_max_entries: 2 }));
   * assert.equal(c.add(0), false);
   * assert.equal(c.add(10), false);
   * assert.equal(c.add(0), true);
   * assert.equal(c.over, "entries");
   * ```
   */
  add(size: number): boolean {
    this.entries++;
    this.bytes += size;
    if (this.over === undefined) {
      if (this.entries > this.quota.entries) this.over = "entries";
      else if (this.bytes > this.quota.bytes) this.over = "bytes";
    }
    return this.over !== undefined;
  }

  /**
   * Why the layer is not applied (or only in part), naming the bound and
   * its setting; `grew`: it went past while it was applied; `hold`: it was
   * to be held for review (./held_writer.ts), and nothing of it is.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { layerQuota, QuotaCount } from "./layer_quota.ts";
   * const c = new QuotaCount(layerQuota({ layer_max_entries: 1, where: "toolsets.system" }));
   * c.add(0); c.add(0);
   * assert.match(c.text(), /2 entries, over its quota of 1 entries \(toolsets\.system\.layer_max_entries/);
   * ```
   */
  text(grew = false, hold = false): string {
    const q = this.quota;
    const key = this.over === "bytes" ? "layer_max_bytes" : "layer_max_entries";
    const held = this.over === "bytes"
      ? `${_n(this.bytes)} bytes of files, over its quota of ${_n(q.bytes)} bytes`
      : `${_n(this.entries)} entries, over its quota of ${_n(q.entries)} entries`;
    const where = q.where ? `${q.where}.${key}` : key;
    const what = hold
      ? "none of its changes were held for review"
      : q.partial
      ? "only what fits was applied"
      : grew
      ? "it grew past it while it was applied: only what was read before was applied"
      : "none of its changes were applied";
    return `the sandbox's write layer holds ${held} (${where} in permissions.json): ${what}; ` +
      `the sandbox starts afresh`;
  }
}

function _n(x: number): string {
  return x.toLocaleString("en-US");
}
