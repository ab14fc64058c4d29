/**
 * The host's values of the variables a sandbox's subprocesses may see.
 * Sandboxes are never granted `env`, so the host reads them and passes
 * them with each call (see core/guard/subprocess.ts for the clean
 * environment they build from them).
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";

/**
 * Values of PATH, LANG, TERM and the policy's `env` list in the host's
 * environment (unset ones and ones the host may not read are left out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostVars } from "./host_vars.ts";
 * Deno.env.set("CORRAL_DOC_VAR", "v");
 * assert.equal(hostVars({ env: ["CORRAL_DOC_VAR"] }).CORRAL_DOC_VAR, "v");
 * assert.equal(hostVars({ env: [] }).CORRAL_DOC_VAR, undefined);
 * ```
 */
export function hostVars(policy: Pick<SandboxPolicy, "env">): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of ["PATH", "LANG", "TERM", ...policy.env]) {
    try {
      const v = Deno.env.get(name);
      // An empty PATH (a GUI app's) is no PATH: the subprocesses get the system's default.
      if (v !== undefined && (v !== "" || name !== "PATH")) vars[name] = v;
    } catch { /* no env permission for it */ }
  }
  return vars;
}
