/**
 * A write grant as the sandbox's own overlay layer: what changed in it, what may
 * reach the user's tree (the judge), applying it by replacement, holding it for
 * review, and the merged view long-lived sandboxes see.
 *
 * @module
 */
export {
  type ChangeReport,
  changesOf,
  emptyReport,
  isEmptyReport,
  notAppliedText,
  withChanges,
} from "./change_report.ts";
export { heldRules, type HeldSettlement, settleHeld } from "./held_apply.ts";
export {
  findHeld,
  HELD_ID,
  HeldCorrupt,
  type HeldEntry,
  type HeldFound,
  type HeldManifest,
  HeldNotFound,
  listHeld,
  lockHeld,
  readHeld,
  removeHeld,
} from "./held_store.ts";
export { type HoldRequest, type HoldSet } from "./hold_state.ts";
export { layerQuota } from "./layer_quota.ts";
export { type LayerRules, type SandboxLayers } from "./settle_layers.ts";
export { pathFolders, type StartedLayers, startLayers } from "./start_layers.ts";
export { publishedViews } from "./view_refresh.ts";
export { type PublishedView } from "./view_refresh.ts";
