/**
 * The environment a call carries into its sandbox: the host's values
 * (core/registry/host_vars.ts), the sandbox's limits, and, in the
 * namespace, HOME on its private /tmp and the egress proxy.
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";
import { EGRESS_URL } from "../guard/mod.ts";
import { NAMESPACE_HOME } from "../jail/mod.ts";
import type { SandboxEnv } from "./protocol.ts";

/**
 * `env` as the sandbox needs it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { insideEnv } from "./_sandbox_env.ts";
 * const policy = { max_output_bytes: 10, max_read_bytes: 20 } as never;
 * const e = insideEnv({ vars: {} } as never, policy, true, false);
 * assert.deepEqual([e.maxOutputBytes, e.home, e.proxy], [10, "/tmp/home", undefined]);
 * ```
 */
export function insideEnv(
  env: SandboxEnv,
  policy: SandboxPolicy,
  namespaced: boolean,
  net: boolean,
): SandboxEnv {
  return {
    ...env,
    maxOutputBytes: policy.max_output_bytes,
    maxReadBytes: policy.max_read_bytes,
    ...(namespaced ? { home: NAMESPACE_HOME } : {}),
    ...(namespaced && net ? { proxy: EGRESS_URL } : {}),
  };
}
