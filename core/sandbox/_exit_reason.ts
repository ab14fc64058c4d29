/**
 * Why a process sandbox ended, in words for the call that was running and
 * for `corral list`: a launcher's refusal (a path it binds changed, a write
 * layer it could not mount), its process limit, its limits' set-up, running
 * out of memory, or the last line of what it printed.
 *
 * @module
 */
import { REFUSED_EXIT, REFUSED_MARK } from "../jail/mod.ts";

/** What the sandbox's end looked like. */
export interface SandboxEnd {
  label: string;
  status: Deno.CommandStatus;
  /** The end of its stderr. */
  stderrTail: string;
  /** It hit its process limit. */
  forked: boolean;
  /** The mechanism of its limits (`cgroup1`, …). */
  limitKind: string;
  maxProcesses: number;
  memoryMb: number;
}

/**
 * The reason a sandbox ended.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exitReason } from "./_exit_reason.ts";
 * const end = {
 *   label: "files[rw]", stderrTail: "corral-refused /ws\t/elsewhere\n", forked: false,
 *   limitKind: "cgroup1", maxProcesses: 128, memoryMb: 512,
 *   status: { success: false, code: 96, signal: null },
 * };
 * assert.match(exitReason(end), /not started: the path \/ws it binds is now \/elsewhere/);
 * assert.match(exitReason({ ...end, status: { success: false, code: 133, signal: null } }), /out of memory/);
 * ```
 */
export function exitReason(end: SandboxEnd): string {
  const { status, stderrTail } = end;
  const oom = /out of memory|heap limit|allocation failed/i.test(stderrTail) ||
    status.code === 133 || status.signal === "SIGTRAP";
  if (status.code === REFUSED_EXIT) {
    return `"${end.label}" not started: ${_refusal(stderrTail)}; refusing`;
  }
  if (end.forked) {
    return `hit its process limit (${end.maxProcesses} processes and threads) and was stopped`;
  }
  if (status.code === 97) {
    return `could not set up or join its ${end.limitKind} limits and was not started`;
  }
  if (oom) return `ran out of memory (limit ${end.memoryMb} MB) and was restarted`;
  return `exited unexpectedly (code ${status.code}${status.signal ? `, ${status.signal}` : ""})${
    _lastLine(stderrTail)
  }`;
}

/** The launcher's refusal (core/jail/launcher.ts): which path is now what. */
function _refusal(stderr: string): string {
  const line = stderr.split("\n").find((l) => l.startsWith(REFUSED_MARK));
  const [expected, found] = (line ?? "").slice(REFUSED_MARK.length).split("\t");
  if (!line || !expected) return "a path it binds changed since the policy named it";
  return found?.startsWith("(")
    ? `the path ${expected} it binds is ${found.slice(1, -1)}`
    : `the path ${expected} it binds is now ${found} (a symlink, or renamed, since the policy ` +
      `named it)`;
}

function _lastLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter(
    Boolean,
  );
  const line = lines.find((l) => /error/i.test(l)) ?? lines.at(-1);
  return line ? `: ${line.slice(0, 300)}` : "";
}
