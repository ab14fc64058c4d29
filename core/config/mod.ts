/**
 * What the operator wrote, resolved once: settings, every layer of
 * `permissions.json`, `corral.json`, plugin folders, the team file and trust.
 *
 * @module
 */
export { closestNames } from "./closest.ts";
export { type CorralConfig, emptyConfig, parseConfig } from "./corral_config.ts";
export { envVar, expandHome } from "./env_var.ts";
export {
  AUTHOR_API,
  AUTHOR_API_FILES,
  codeStoreDir,
  configDir,
  CORE_DIR,
  heldBases,
  INSTALL_DIR,
  layerBases,
  ownStateDir,
  userId,
} from "./install_dir.ts";
export { DEFAULT_LAYER_LIMITS, type LayerLimits } from "./layer_limits.ts";
export { type SettingEntry } from "./layers.ts";
export {
  defaultPluginDir,
  EXAMPLES_DIR,
  type PluginDirSetting,
  pluginDirSettings,
  splitToolDirs,
  TOOL_DIRS_ENV,
} from "./plugin_dirs.ts";
export {
  dirPluginFiles,
  errorReason,
  importHosts,
  isPluginFileName,
  isRemoteSpecifier,
  packageName,
  type PluginCandidate,
  type PluginSet,
  pluginSet,
  stemOf,
  uniqueLabels,
} from "./plugin_set.ts";
export { loadPolicy, parsePolicy, type Policy, readyJsonc, type SandboxPolicy } from "./policy.ts";
export { projectFile, trustFile } from "./project_trust.ts";
export { liftedWhy } from "./protected_paths.ts";
export { riskyWorkspace, riskyWorkspaceError, UNSAFE_WORKSPACE_FLAG } from "./risky_workspace.ts";
export { type ServerEntry } from "./server_config.ts";
export { resolveSettings, type Settings } from "./settings.ts";
export {
  type AuthConfig,
  claimableIdentity,
  IDENTITY_NAME,
  type IdentityConfig,
  OPERATOR_IDENTITY,
} from "./team_config.ts";
export {
  checkWrites,
  pluginRoot,
  PROJECT_FILES,
  trustBase,
  type TrustedPath,
} from "./trust_base.ts";
export { corralVersion } from "./version.ts";
