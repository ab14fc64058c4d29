/**
 * The progress line of a long discovery: `discovering tools: 120 of 1000
 * modules`, on stderr when it is a terminal, once the discovery has taken
 * more than a second, rewritten in place and cleared at the end. Nothing
 * on a pipe or a file (the output of `corral list --json` stays clean).
 *
 * @module
 */

/** A progress line: told what is done, then ended. */
export interface Progress {
  /** `done` of `total` modules imported so far. */
  update(done: number, total: number): void;
  /** The work is over: the line, if shown, is cleared. */
  end(): void;
}

/** Options of {@link progressLine} (the defaults are stderr's). */
export interface ProgressOptions {
  /** Whether the output is a terminal (default: stderr is one). */
  terminal?: boolean;
  /** Where the line goes (default: stderr). */
  write?: (text: string) => void;
  /** How long the work runs before the line shows (default 1000 ms). */
  afterMs?: number;
}

/**
 * A progress line, or one that shows nothing when the output is no terminal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { progressLine } from "./_discovery_progress.ts";
 * const out: string[] = [];
 * const p = progressLine({ terminal: true, write: (t) => out.push(t), afterMs: 0 });
 * p.update(3, 10);
 * p.end();
 * assert.ok(out.some((t) => t.includes("3 of 10")));
 * assert.equal(out.at(-1), "\r\x1b[2K");
 * const quiet: string[] = [];
 * const q = progressLine({ terminal: false, write: (t) => quiet.push(t), afterMs: 0 });
 * q.update(1, 2);
 * q.end();
 * assert.deepEqual(quiet, []);
 * ```
 */
export function progressLine(options: ProgressOptions = {}): Progress {
  const terminal = options.terminal ?? _stderrIsTerminal();
  if (!terminal) return { update() {}, end() {} };
  const write = options.write ?? _stderr;
  let done = 0, total = 0, due = false, shown = false, over = false;
  const show = () => {
    if (over || !due || total === 0) return;
    shown = true;
    write(`\r\x1b[2Kdiscovering tools: ${done} of ${total} modules`);
  };
  const afterMs = options.afterMs ?? 1000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (afterMs > 0) {
    const t = timer = setTimeout(() => {
      due = true;
      show();
    }, afterMs);
    Deno.unrefTimer(t as unknown as number);
  } else due = true;
  return {
    update(d, t) {
      done = d;
      total = t;
      show();
    },
    end() {
      over = true;
      clearTimeout(timer);
      if (shown && total > 0) write("\r\x1b[2K");
    },
  };
}

function _stderrIsTerminal(): boolean {
  try {
    return Deno.stderr.isTerminal();
  } catch {
    return false;
  }
}

const _encoder = new TextEncoder();

function _stderr(text: string): void {
  try {
    Deno.stderr.writeSync(_encoder.encode(text));
  } catch { /* stderr gone */ }
}
