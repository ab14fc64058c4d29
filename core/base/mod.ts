/**
 * Small helpers every layer uses, with no policy of their own: SHA-256 in hex,
 * path containment, a file's stamp, whether a path exists, files that decide who a
 * caller is, keeping secrets out of what corral shows, and the output of the
 * programs corral runs for itself.
 *
 * @module
 */
export { childErrorText, QUIET_CHILD_ENV } from "./child_output.ts";
export { denoDir } from "./deno_dir.ts";
export { fileStamp, RACY_MS } from "./file_stamp.ts";
export { isWithin } from "./is_within.ts";
export { ownedFileProblem } from "./owned_file.ts";
export { pathExists } from "./path_exists.ts";
export { hideHostPaths, redact, scrubDeep, scrubText, SECRET_KEY, secretValues } from "./redact.ts";
export { sha256Hex, useNativeSha256 } from "./sha256_hex.ts";
export {
  installMetrics,
  type LiveSandbox,
  type MetricsTarget,
  runningSandboxes,
  sink,
} from "./metrics_sink.ts";
export { processTreeMemory, type TreeMemory } from "./process_memory.ts";
export { markSandbox, useTrace } from "./sandbox_mark.ts";
export {
  compiledCorral,
  denoProgram,
  dropPermissions,
  SELF_PROGRAMS,
  selfCommand,
  selfFile,
  type ShellProgram,
  shellProgram,
  useSelfStore,
  writeSelfFiles,
  WRITTEN_OUT,
} from "./self_run.ts";
