/**
 * The checks a tool applies inside its sandbox, on its own arguments: paths
 * inside the grant (./paths.ts), the network guard (./net_guard.ts), commands with
 * a clean environment and caps (./subprocess.ts), writing by replacement
 * (./replace_file.ts), and the table of planted-code names (./planted.ts) that the
 * host's judge (core/layers/) enforces as a wall. These are courtesies, not
 * walls: the walls are core/jail/, core/seccomp/, core/layers/ and core/egress/.
 *
 * @module
 */
export {
  bridgeEgress,
  EGRESS_LISTEN,
  EGRESS_SOCKET_IN_NAMESPACE,
  EGRESS_URL,
  proxyVars,
} from "./egress_env.ts";
export {
  type AddressClass,
  classifyAddress,
  configureNetGuard,
  type GuardOptions,
  guardUrl,
  isIpAddress,
  listedExplicitly,
  NetworkGuardError,
} from "./net_guard.ts";
export {
  displayPath,
  fsError,
  GRANT_RULE,
  isInside,
  resolveInside,
  type ResolveOptions,
} from "./paths.ts";
export {
  assertNotPlanted,
  HOOKS_PATH_ENTRY,
  matchPlanted,
  normalizeEntry,
  PLANTED_DEFAULT_ENTRIES,
  PLANTED_DEFAULTS,
  plantedEntries,
} from "./planted.ts";
export { replaceFile } from "./replace_file.ts";
export {
  configureSubprocesses,
  runSubprocess,
  type SubprocessOptions,
  type SubprocessResult,
} from "./subprocess.ts";
export { isTempName, TEMP_PREFIX, tempToken } from "./temp_names.ts";
