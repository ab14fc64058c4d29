/**
 * The first wall: the namespace every sandbox runs in. bwrap is found and checked
 * (./jail.ts), the namespace is built step by step (./namespace.ts: its own mounts,
 * the runtime and its libraries, the grant's mounts), the launcher opens, checks and
 * mounts what it binds (./launcher.ts with ./launch.sh and ./launch_stage.sh), cgroup
 * limits cap it (./limits.ts with ./limits_probe.sh, ./limits_join.sh and
 * ./limits_release.sh), and the programs corral runs, its shell programs among them, are
 * named in ../base/self_run.ts.
 * Read this folder and core/seccomp/ and you have read the jail.
 *
 * @module
 */
export { findBwrap, type JailMode, type JailStatus } from "./jail.ts";
export { launcherCommand, SECCOMP_ARG } from "./launcher.ts";
export {
  createLimits,
  type LimitedChild,
  limitedCommand,
  limitKind,
  limitsMissing,
  type LimitSpec,
  type LimitsProbe,
  limitsProbe,
  probeLimits,
  REFUSED_EXIT,
  REFUSED_MARK,
  type SandboxLimits,
  spawnLimited,
  VERIFY_ARG,
} from "./limits.ts";
export {
  isWithin,
  namespaceArgs,
  namespaceBase,
  namespaceLayout,
  namespacePath,
  type RuntimeFiles,
  seccompArgs,
  type SeccompFiles,
} from "./namespace.ts";
export { etcFiles } from "./namespace_etc.ts";
export { runtimeFiles } from "./namespace_runtime.ts";
export { NAMESPACE_HOME } from "./own_mounts.ts";
