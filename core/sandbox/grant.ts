/**
 * The effective grant of a tool: its declared letters ∩ the host's
 * privileges (CLI flags and what Deno granted the process) ∩ the policy.
 *
 * @module
 */
import { type Letter, LETTER_FLAGS, LETTER_NAMES, LETTERS } from "../tool/permissions.ts";
import type { SandboxPolicy } from "../config/policy.ts";
import type { Grant } from "../tool/tool.ts";

type _Kind = "read" | "write" | "run" | "net";
const _KIND: Record<Letter, _Kind> = { r: "read", w: "write", x: "run", n: "net" };

/** What the host itself may grant. */
export interface HostPrivileges {
  /** Letters selected on the command line (`-r -w -x -n`; all when none given). */
  letters: string;
  /** Whether Deno granted this process `kind` for `value` (a path, command or host). */
  denoGranted(kind: _Kind, value: string): boolean;
}

/** Privileges from the CLI letters and `Deno.permissions.querySync`. */
export function hostPrivileges(letters = "rwxn"): HostPrivileges {
  return {
    letters,
    denoGranted(kind, value) {
      try {
        const desc: Deno.PermissionDescriptor = kind === "read" || kind === "write"
          ? { name: kind, path: value }
          : kind === "run"
          ? { name: "run", command: value }
          : { name: "net", host: value };
        return Deno.permissions.querySync(desc).state === "granted";
      } catch {
        return false;
      }
    },
  };
}

/** The outcome of {@link effectiveGrant}. */
export interface GrantDecision {
  grant: Grant;
  /** Why the tool cannot load (the first missing letter), or undefined. */
  missing?: string;
}

/**
 * Compute the grant of a tool with `letters` under `policy` and `host`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { effectiveGrant } from "./grant.ts";
 * const host = { letters: "r", denoGranted: () => true };
 * const policy = { read: ["/w"], write: ["/w"], run: [], net: [], env: [], where: "toolsets.files" } as any;
 * assert.ok(effectiveGrant("rw", policy, host).missing?.startsWith("needs w"));
 * ```
 */
export function effectiveGrant(
  letters: string,
  policy: SandboxPolicy,
  host: HostPrivileges,
): GrantDecision {
  const grant: Grant = { read: [], write: [], run: [], net: [], env: [...policy.env] };
  if (policy.planted) grant.planted = [...policy.planted];
  let missing: string | undefined;
  for (const l of LETTERS) {
    if (!letters.includes(l)) continue;
    const kind = _KIND[l];
    const values = policy[kind];
    if (!host.letters.includes(l)) {
      missing ??= `needs ${l} (${LETTER_NAMES[l]}): start corral with -${l}`;
      continue;
    }
    if (values.length === 0) {
      // The narrowest fix: the plugin's own entry, not plugins.default for everyone.
      const fix = policy.own ?? policy.where;
      missing ??= `needs ${l} (${LETTER_NAMES[l]}): permissions.json grants no ${
        _what(kind)
      } to ${policy.where} (add "${kind}": [...] ${
        fix !== policy.where ? `to ${fix}, this plugin's own entry` : "there"
      })`;
      continue;
    }
    const refused = values.find((v) => !host.denoGranted(kind, v));
    if (refused !== undefined) {
      missing ??= `needs ${l} (${LETTER_NAMES[l]}): start corral with ${
        LETTER_FLAGS[l]
      } (Deno does not grant ${kind} of "${refused}")`;
      continue;
    }
    grant[kind] = [...values];
  }
  return missing ? { grant, missing } : { grant };
}

/** The most a sandbox of this policy may hold on this host (for discovery). */
export function ceilingGrant(policy: SandboxPolicy, host: HostPrivileges): Grant {
  const grant: Grant = { read: [], write: [], run: [], net: [], env: [...policy.env] };
  if (policy.planted) grant.planted = [...policy.planted];
  for (const l of LETTERS) {
    if (!host.letters.includes(l)) continue;
    const kind = _KIND[l];
    grant[kind] = policy[kind].filter((v) => host.denoGranted(kind, v));
  }
  return grant;
}

function _what(kind: _Kind): string {
  return kind === "run" ? "commands" : kind === "net" ? "hosts" : `${kind} paths`;
}

/** A short text of a grant for `list`: `r:/w w:/w x:bash`. */
export function describeGrant(g: Grant): string {
  const parts: string[] = [];
  if (g.read.length) parts.push(`read=${g.read.join(",")}`);
  if (g.write.length) parts.push(`write=${g.write.join(",")}`);
  if (g.run.length) parts.push(`run=${g.run.join(",")}`);
  if (g.net.length) parts.push(`net=${g.net.join(",")}`);
  return parts.join(" ") || "none";
}

/**
 * Whether a grant holds files or commands: then its sandbox needs the
 * namespace (or an explicit opt-out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { holdsFilesOrCommands } from "./grant.ts";
 * assert.ok(holdsFilesOrCommands({ read: ["/w"], write: [], run: [], net: [] }));
 * assert.ok(!holdsFilesOrCommands({ read: [], write: [], run: [], net: ["example.com"] }));
 * ```
 */
export function holdsFilesOrCommands(grant: Grant): boolean {
  return grant.read.length + grant.write.length + grant.run.length > 0;
}
