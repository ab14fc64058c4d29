/**
 * Where tool code runs: the host side of a sandbox, its transports, the entry
 * points inside, the wire protocol, pinned code and the emit cache.
 *
 * @module
 */
export { AskBudget } from "./ask_budget.ts";
export { selfHosted } from "./child_command.ts";
export { DenoNeeds } from "./discovery_deno_dir.ts";
export {
  ceilingGrant,
  describeGrant,
  effectiveGrant,
  holdsFilesOrCommands,
  type HostPrivileges,
  hostPrivileges,
} from "./grant.ts";
export {
  HOST_FLAGS,
  HOST_PERMISSION_FLAGS,
  HOST_V8_FLAGS,
  processSandboxMissing,
} from "./host_flags.ts";
export { LastChanges, type Settles } from "./last_changes.ts";
export { IMPORT_SPECIFIER, localModuleGraph, type Pins, resolveLocal } from "./module_graph.ts";
export { type LaunchPlan, prestart, recordNextLaunch } from "./prestart.ts";
export {
  ASK_KEY_META,
  type AskKind,
  ISOLATED_WORKERS,
  type ModuleMeta,
  type SandboxEnv,
  type ToolMeta,
} from "./protocol.ts";
export { Sandbox } from "./sandbox.ts";
export { sandboxEntryFiles } from "./sandbox_files.ts";
export { type SandboxOptions } from "./sandbox_options.ts";
export { prepareSealedRuntime, sealedNamespace } from "./sealed_runtime.ts";
export { settleAfter } from "./settled_result.ts";
