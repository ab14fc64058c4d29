/**
 * The call sandbox pool's limits from the command line: `--max-sandboxes N`
 * (live sandboxes at once, default 64) and, with `--http`, `--session-idle
 * SECS` (a sandbox unused this long closes, as a session idle this long does).
 *
 * @module
 */
import type { SandboxPoolLimits } from "../registry/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import type { CliValues } from "./_options.ts";

/** The pool limits `values` ask for (empty: the defaults). */
export function sandboxLimitsOf(values: CliValues): SandboxPoolLimits {
  const out: SandboxPoolLimits = {};
  const max = _positive(values["max-sandboxes"], "--max-sandboxes");
  if (max !== undefined) out.max = max;
  const idle = values.http !== undefined
    ? _positive(values["session-idle"], "--session-idle")
    : undefined;
  if (idle !== undefined) out.idleMs = idle * 1000;
  return out;
}

function _positive(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) {
    throw new ConfigError(`${flag} must be a positive integer, got "${text}"`);
  }
  return n;
}
