/**
 * A sandbox started ahead: a cold `corral call` spends most of its time
 * loading the host and working out which sandbox the call needs, while the
 * second core sits idle. The CLI may start, at once, the sandbox the same
 * command needed last time (its launch plan, kept in corral's cache:
 * core/cli/prestart_recipe.ts); the process sandbox adopts it only when the
 * plan it works out now is exactly that one, else the early one is killed.
 *
 * The early sandbox gets its frame token and its first line (what it holds)
 * at once, so that it drops what it does not hold and loads corral's
 * runtime meanwhile; the token stays in this process and goes to the
 * adopting transport. It may also load the modules of a built-in toolset
 * (corral's own code, in corral's folder) ahead: no call, no plugin code
 * and no tool's arguments reach it before the host has checked everything
 * and adopted it. Only plans without a write grant, commands or a network
 * proxy are kept (the others make placeholders, proxies or subprocesses).
 *
 * @module
 */
import { INSTALL_DIR } from "../config/mod.ts";
import { isInside } from "../guard/mod.ts";
import { type LimitedChild, type LimitSpec, type LimitsProbe, spawnLimited } from "../jail/mod.ts";

/** Everything a process sandbox is started with: its first line and `spawnLimited`'s arguments. */
export interface LaunchPlan {
  /** The line after the token: what the sandbox holds (core/sandbox/sandbox_child.ts). */
  init: string;
  spec: LimitSpec;
  allowRlimit: boolean;
  command: string;
  args: string[];
  openBinds: boolean;
  cwd: string;
  env: Record<string, string>;
}

/** A sandbox started ahead and adopted: the running child and the token it holds. */
export interface Adopted {
  started: LimitedChild;
  token: string;
}

let _early: { plan: string; adopted: Adopted; exited: boolean } | undefined;
let _recorder: ((plan: LaunchPlan, preload: string[]) => void) | undefined;
const _TOOLSETS = `${INSTALL_DIR}/toolsets`;

/**
 * Start `plan` now, with the limits' mechanism as `found` last time (no
 * probe: the registry probes again), and give it its token and first line;
 * `preload` are built-in tool modules it may load ahead. Fails quietly: the
 * call then starts its sandbox as usual.
 */
export function prestart(plan: LaunchPlan, found: LimitsProbe, preload: string[] = []): void {
  if (_early) return;
  try {
    const started = spawnLimited(plan.spec, plan.allowRlimit, plan.command, plan.args, {
      openBinds: plan.openBinds,
      cwd: plan.cwd,
      env: plan.env,
    }, found);
    const token = crypto.randomUUID().replaceAll("-", "");
    const builtins = preload.filter((m) => isInside(m, _TOOLSETS));
    const init = builtins.length ? { ...JSON.parse(plan.init), preload: builtins } : plan.init;
    const first = `${token}\n${typeof init === "string" ? init : JSON.stringify(init)}\n`;
    const writer = started.child.stdin.getWriter();
    writer.write(new TextEncoder().encode(first)).catch(() => {});
    writer.releaseLock();
    const early = { plan: JSON.stringify(plan), adopted: { started, token }, exited: false };
    started.child.status.then(() => early.exited = true, () => early.exited = true);
    _early = early;
  } catch { /* no sandbox ahead */ }
}

/**
 * The sandbox started ahead, when `plan` is exactly its plan and it still
 * runs; otherwise undefined, and the early one (if any) is killed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { adoptPrestarted } from "./prestart.ts";
 * const plan = { init: "{}", spec: { pids: 64, memoryMb: 256 }, allowRlimit: true,
 *   command: "true", args: [], openBinds: false, cwd: "/", env: {} };
 * assert.equal(adoptPrestarted(plan), undefined); // none was started
 * ```
 */
export function adoptPrestarted(plan: LaunchPlan): Adopted | undefined {
  const early = _early;
  if (!early) return undefined;
  _early = undefined;
  if (!early.exited && early.plan === JSON.stringify(plan)) return early.adopted;
  _stop(early.adopted.started);
  return undefined;
}

/** Stop a sandbox started ahead that nothing adopted (the command ends, or failed early). */
export async function dropPrestarted(): Promise<void> {
  const early = _early;
  _early = undefined;
  if (early) await _stop(early.adopted.started);
}

/** Hear the next launch plan that could be started ahead (the CLI keeps it for next time). */
export function recordNextLaunch(recorder: (plan: LaunchPlan, preload: string[]) => void): void {
  _recorder = recorder;
}

/**
 * A process sandbox was planned with `plan` (side-effect free: no write
 * grant, no proxy) for `spec.modules`.
 */
export function noteLaunch(plan: LaunchPlan, spec: { modules?: string[] }): void {
  const recorder = _recorder;
  _recorder = undefined;
  if (JSON.parse(plan.init).run?.length) return; // a sandbox that runs commands: never ahead
  recorder?.(plan, spec.modules ?? []);
}

function _stop(started: LimitedChild): Promise<void> {
  try {
    started.child.kill("SIGKILL");
  } catch { /* exited */ }
  return started.limits.release().then(() => {});
}
