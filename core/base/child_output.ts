/**
 * The output of the programs corral runs for itself (deno, npm, pip, git)
 * as a person reads it: they run with colour, progress bars, prompts and
 * backtraces off ({@link QUIET_CHILD_ENV}), and an error keeps the lines
 * that say why, never stack frames nor terminal escapes
 * ({@link childErrorText}).
 *
 * @module
 */

/**
 * Environment for a program corral runs for itself: no colour (`NO_COLOR`,
 * `FORCE_COLOR=0`, npm's and pip's own switches), no Rust backtrace (Deno
 * prints one whenever `RUST_BACKTRACE` is set), no prompts, no pager, no
 * progress bars, no update checks.
 */
export const QUIET_CHILD_ENV: Readonly<Record<string, string>> = Object.freeze({
  NO_COLOR: "1",
  FORCE_COLOR: "0",
  CLICOLOR: "0",
  TERM: "dumb",
  RUST_BACKTRACE: "0",
  RUST_LIB_BACKTRACE: "0",
  DENO_NO_UPDATE_CHECK: "1",
  DENO_NO_PROMPT: "1",
  npm_config_color: "false",
  npm_config_progress: "false",
  npm_config_update_notifier: "false",
  PIP_NO_COLOR: "1",
  PIP_PROGRESS_BAR: "off",
  PIP_DISABLE_PIP_VERSION_CHECK: "1",
  PY_COLORS: "0",
  GIT_TERMINAL_PROMPT: "0",
  GIT_PAGER: "cat",
  PAGER: "cat",
});

// CSI (colours, cursor), OSC (titles, links, clipboard), and any other escape.
// deno-lint-ignore no-control-regex
const _ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?/g;
// deno-lint-ignore no-control-regex
const _CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

/**
 * What a failed program's output says, for a message: escapes and control
 * characters removed; stack frames (JavaScript `at …`, Rust's `Stack
 * backtrace:` and its numbered frames, Python's `Traceback` and its `File`
 * lines), progress (`Download …`) and blank lines dropped; then the lines
 * from the first that says `error` on (else the last ones), at most
 * `maxLines`, cut at `maxChars`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { childErrorText } from "./child_output.ts";
 * const out = "\x1b[0m\x1b[32mDownload\x1b[0m https://registry.npmjs.org/x\n" +
 *   "\x1b[1m\x1b[31merror\x1b[0m: Could not find npm package 'x' matching '9.9.9'.\n\n" +
 *   "Stack backtrace:\n   0: <unknown>\n   1: <unknown>\n";
 * assert.equal(childErrorText(out), "error: Could not find npm package 'x' matching '9.9.9'.");
 * const py = "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n" +
 *   "    import nope\nModuleNotFoundError: No module named 'nope'\n";
 * assert.equal(childErrorText(py), "ModuleNotFoundError: No module named 'nope'");
 * ```
 */
export function childErrorText(output: string, maxLines = 8, maxChars = 800): string {
  const lines: string[] = [];
  let frames = false;
  let pyFrame = false;
  for (const raw of output.replace(_ESCAPES, "").split(/\r?\n|\r/)) {
    const line = raw.replace(_CONTROL, "").trimEnd();
    const text = line.trim();
    if (text === "") continue;
    if (/^Stack backtrace:$/i.test(text) || /^Traceback \(most recent call last\):$/.test(text)) {
      frames = true;
      continue;
    }
    // Rust frames: "0: <unknown>", "  at src/x.rs:1:2"; JavaScript frames: "at f (file:1:2)".
    if (/^\d+: /.test(text) && frames) continue;
    if (/^at \S/.test(text)) continue;
    if (/^File ".*", line \d+/.test(text)) {
      pyFrame = true;
      continue;
    }
    // The source line Python shows under a frame (indented deeper than the frame).
    if (pyFrame && /^\s{4,}/.test(line)) continue;
    pyFrame = false;
    frames = false;
    if (/^(Download|Downloading|Progress|Collecting|Using cached)\b/.test(text)) continue;
    lines.push(text);
  }
  const first = lines.findIndex((l) => /\berror\b/i.test(l));
  const kept = first >= 0 ? lines.slice(first, first + maxLines) : lines.slice(-maxLines);
  const text = kept.join("\n");
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
