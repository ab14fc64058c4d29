/**
 * Whether a call's changes are held for review instead of applied
 * (core/layers/hold_state.ts), and why: `--hold` (the registry's, or the
 * call's own option), `tools.<name>.hold`, or the `hold` of the toolset's,
 * plugin's or server's entry in `permissions.json` (or of its `defaults`).
 *
 * @module
 */
import type { Policy, SandboxPolicy } from "../config/mod.ts";
import type { AuditWho } from "../audit/mod.ts";
import type { HoldRequest } from "../layers/mod.ts";

/**
 * The hold of a call of `tool` (of `toolset`, whose sandbox's policy is
 * `sandbox`), or undefined when its changes are applied.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "../config/mod.ts";
 * import { holdRequest } from "./_call_hold.ts";
 * const policy = parsePolicy('{"tools": {"Write": {"hold": true}}}', "p.json", "/w");
 * const who = { identity: "local", session: "local" };
 * const files = policy.toolset("files");
 * assert.equal(holdRequest("Write", "files", files, policy, false, who)?.by, "tools.Write.hold");
 * assert.equal(holdRequest("Read", "files", files, policy, false, who), undefined);
 * assert.equal(holdRequest("Read", "files", files, policy, true, who)?.by, "--hold");
 * ```
 */
export function holdRequest(
  tool: string,
  toolset: string,
  sandbox: SandboxPolicy,
  policy: Policy,
  asked: boolean | undefined,
  who: AuditWho,
): HoldRequest | undefined {
  const by = asked
    ? "--hold"
    : policy.hold(tool)
    ? `tools.${tool}.hold`
    : sandbox.hold
    ? `${sandbox.where}.hold`
    : undefined;
  return by ? { tool, by, toolset, identity: who.identity, session: who.session } : undefined;
}
