/**
 * Which tools exist, how they are found and cached, and how one call runs:
 * grant, sandbox pool, audit and settlement.
 *
 * @module
 */
export { registryBanner } from "./banner.ts";
export { builtinToolsets, reservedToolNames, toolModules } from "./builtin_toolsets.ts";
export { DEFINED_TWICE, LATER_USED } from "./catalog.ts";
export { defaultCacheDir, DiscoveryCache } from "./discovery_cache.ts";
export { grantPaths } from "./grant_paths.ts";
export { type NotLoaded } from "./not_loaded.ts";
export {
  type LoadProblem,
  Registry,
  type RegistryCallOptions,
  type RegistryOptions,
  type ToolInfo,
} from "./registry.ts";
export { registryFolders, secondWall } from "./registry_folders.ts";
export { type SandboxPoolLimits } from "./sandbox_pool.ts";
export { type ToolsetSource } from "./toolset_source.ts";
