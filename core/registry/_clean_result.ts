/**
 * What a caller gets of a call's result: secrets scrubbed from all of it,
 * no host path outside the workspace in its error nor in the text blocks
 * of a failure (a hosted server's error travels in both: the same text is
 * cut the same way), and Deno's "run again with the --allow-… flag" turned
 * into the policy change that would allow it. The marks corral put on the
 * result (its fault, its change list) stay on the cleaned copy.
 *
 * @module
 */
import { hideHostPaths, scrubDeep } from "../base/mod.ts";
import { changesOf, withChanges } from "../layers/mod.ts";
import { faultOf, type ToolResult, withFault } from "../tool/mod.ts";
import type { Catalog } from "./catalog.ts";

/**
 * `result` of tool `name`, cleaned for its caller (a copy when anything is scrubbed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cleanResult } from "./_clean_result.ts";
 * import { changesOf, emptyReport, withChanges } from "../layers/mod.ts";
 * const raw = withChanges({ success: false, error: "token S3CRET at /ws/a.txt" }, emptyReport());
 * const out = cleanResult(raw, "X", {
 *   secrets: new Set(["S3CRET"]),
 *   workspace: "/ws",
 *   catalog: { anyEntry: () => undefined },
 * });
 * assert.equal(out.error, "token [redacted] at a.txt");
 * assert.ok(changesOf(out)); // the change list is still on it
 * ```
 */
export function cleanResult(
  result: ToolResult,
  name: string,
  o: { secrets: Set<string>; workspace: string; catalog: Pick<Catalog, "anyEntry"> },
): ToolResult {
  const out = scrubDeep(result, o.secrets);
  const ws = o.workspace;
  if (typeof out.error === "string") {
    out.error = hideHostPaths(_policyHint(out.error, o.catalog, name), ws);
  }
  if (out.success === false && Array.isArray(out.content_blocks)) {
    out.content_blocks = out.content_blocks.map((b) =>
      b?.type === "text" && typeof b.text === "string"
        ? { ...b, text: hideHostPaths(_policyHint(b.text, o.catalog, name), ws) }
        : b
    );
  }
  if (out === result) return out;
  const fault = faultOf(result);
  const changes = changesOf(result);
  if (fault) withFault(out, fault.outcome, fault.reason);
  return changes ? withChanges(out, changes) : out;
}

const _LETTER = { read: "r", write: "w", run: "x", net: "n" } as const;

/**
 * Deno's "run again with the --allow-read flag" means nothing to the
 * operator of a sandbox: say which policy change would allow it.
 */
function _policyHint(error: string, catalog: Pick<Catalog, "anyEntry">, name: string): string {
  const policy = catalog.anyEntry(name)?.source.policy;
  error = error.replace(
    /this tool's entry in permissions\.json/g,
    `${policy?.own ?? policy?.where ?? "(this tool's entry)"} of ${
      policy?.file ?? "permissions.json"
    }`,
  );
  return error.replace(
    /Requires (read|write|run|net) access to "([^"]+)", run again with the --allow-\w+ flag/,
    (_m, kind: keyof typeof _LETTER, what: string) => {
      const source = catalog.anyEntry(name)?.source;
      const where = source?.policy;
      const entry = where?.own ?? where?.where ?? "its toolset's entry";
      // A hosted server holds a letter by its list alone: the list is the operator's change.
      if (source?.kind === "server") {
        return `server "${source.id}" may not ${kind} "${what}": to allow it, add it to ` +
          `${entry}.${kind} in ${where?.file ?? "permissions.json"}`;
      }
      return `this tool may not ${kind} "${what}": to allow it, give the tool the letter ` +
        `${_LETTER[kind]} and add it to "${kind}" of ${entry} in ${
          where?.file ?? "permissions.json"
        }`;
    },
  );
}
