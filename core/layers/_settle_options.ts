/**
 * What a sandbox's layers are settled with (./settle_layers.ts): their
 * folders, their rules and bounds, and, for held changes being applied or
 * shown (./held_apply.ts), the view they were made on and the applier.
 *
 * @module
 */
import type { RuleContext } from "./change_rules.ts";
import type { LayerDirs } from "./layer_dirs.ts";
import type { LayerQuota } from "./layer_quota.ts";
import type { applyInRoot } from "./_root_applier.ts";
import type { Sig } from "./_tree_sig.ts";

/** What the rules of a sandbox's layers are (the root and what git says are added per layer). */
export type LayerRules = Omit<RuleContext, "root" | "hooksFolders" | "gitDirs" | "configFiles">;

/** What a `SandboxLayers` (./settle_layers.ts) is made of. */
export interface SandboxLayersOptions {
  dirs: LayerDirs;
  /** Mount points made in the layers (core/jail/grant_mounts.ts): never applied. */
  artifacts: string[];
  rules: LayerRules;
  /** Where conflicting versions are kept. */
  conflictsDir: string;
  /** The bounds of the layers (./layer_quota.ts); absent: corral's defaults. */
  quota?: LayerQuota;
  /**
   * Held changes being applied (./held_apply.ts): the view of the tree they
   * were made on (each root's epoch, the signatures, when each entry
   * entered the layer), so that they are judged as their settlement would have been.
   */
  resume?: HeldView;
  /**
   * What applies the changes (default ./_root_applier.ts). Another one is a
   * dry run (./held_apply.ts shows held changes with one that writes
   * nothing): nothing is flushed after it.
   */
  applier?: typeof applyInRoot;
}

/** The view of the tree held changes were made on (absolute paths). */
export interface HeldView {
  epochs: Map<string, number>;
  view: Map<string, Sig | null>;
  births: Map<string, number>;
}

/** One applied change, told to the other sandboxes over the same root. */
export interface Applied {
  abs: string;
  sig: Sig | null;
  /** A path made or removed (not only rewritten): their views may hold it stale. */
  named: boolean;
}
