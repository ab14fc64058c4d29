/**
 * The effective grant of a tool: its declared letters ∩ the host's
 * privileges (CLI flags and what Deno granted the process) ∩ the policy.
 *
 * @module
 */
import { type Grant, type Letter, LETTER_FLAGS, LETTER_NAMES, LETTERS } from "../tool/mod.ts";
import type { SandboxPolicy } from "../config/mod.ts";

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
  /** Why the tool cannot load (every missing letter, each with its fix), or undefined. */
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
  // Every missing letter at once, grouped by what the operator changes.
  const flags: Letter[] = [], empty: Letter[] = [], denied: Array<[Letter, string]> = [];
  for (const l of LETTERS) {
    if (!letters.includes(l)) continue;
    const kind = _KIND[l];
    const values = policy[kind];
    if (!host.letters.includes(l)) flags.push(l);
    else if (values.length === 0) empty.push(l);
    else {
      const refused = values.find((v) => !host.denoGranted(kind, v));
      if (refused !== undefined) denied.push([l, refused]);
      else grant[kind] = [...values];
    }
  }
  const why: string[] = [];
  if (flags.length) {
    why.push(`${_needs(flags)}: start corral with ${flags.map((l) => `-${l}`).join(" ")}`);
  }
  if (empty.length) {
    // The narrowest fix: the plugin's own entry, not plugins.default for everyone.
    const fix = policy.own ?? policy.where;
    const kinds = empty.map((l) => _KIND[l]);
    why.push(
      `${_needs(empty)}: ${policy.file ?? "permissions.json"} grants no ${
        kinds.map(_what).join(", no ")
      } to ${policy.where} (add ${kinds.map((k) => `"${k}": [...]`).join(", ")} ${
        fix !== policy.where ? `to ${fix}, this plugin's own entry` : "there"
      })`,
    );
  }
  if (denied.length) {
    why.push(
      `${_needs(denied.map(([l]) => l))}: start corral with ${
        denied.map(([l]) => LETTER_FLAGS[l]).join(" ")
      } (Deno does not grant ${denied.map(([l, v]) => `${_KIND[l]} of "${v}"`).join(", ")})`,
    );
  }
  return why.length ? { grant, missing: why.join("; ") } : { grant };
}

function _needs(letters: Letter[]): string {
  return `needs ${letters.map((l) => `${l} (${LETTER_NAMES[l]})`).join(", ")}`;
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
