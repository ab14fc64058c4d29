/**
 * Host-side progress reporting: to stderr only, coloured by the tool's
 * permission letters (green read-only, yellow write/execute, blue none),
 * honouring `NO_COLOR`.
 *
 * @module
 */
import type { ReportKind, ReportOptions } from "./tool.ts";

/** One report as it travels from a sandbox to the host. */
export interface Report {
  kind: ReportKind;
  message: string;
  options?: ReportOptions;
}

/** Something that writes text (stderr by default). */
export type Sink = (text: string) => void;

const _encoder = new TextEncoder();
const _stderr: Sink = (text) => {
  Deno.stderr.writeSync(_encoder.encode(text));
};

function _noColor(): boolean {
  return !wantsColour(Deno.stderr);
}

/**
 * Whether output to `stream` should be coloured: `FORCE_COLOR` (not `0`)
 * says yes, `NO_COLOR` says no, and otherwise only a terminal gets colour.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wantsColour } from "./reporter.ts";
 * assert.equal(wantsColour({ isTerminal: () => false }), Boolean(Deno.env.get("FORCE_COLOR") && Deno.env.get("FORCE_COLOR") !== "0"));
 * ```
 */
export function wantsColour(stream: { isTerminal(): boolean }): boolean {
  try {
    const force = Deno.env.get("FORCE_COLOR");
    if (force !== undefined && force !== "" && force !== "0") return true;
    if (Deno.env.get("NO_COLOR")) return false;
  } catch { /* no env permission: decide by the stream */ }
  try {
    return stream.isTerminal();
  } catch {
    return false;
  }
}

const _CODES = {
  green: 32,
  yellow: 33,
  blue: 34,
  red: 31,
  magenta: 35,
  cyan: 36,
  dim: 2,
} as const;

/** Colour names used by the reporter. */
export type Colour = keyof typeof _CODES;

/**
 * Text from tools made safe for a terminal: every C0 control character
 * (except newline and tab), DEL and every C1 control character, ESC first
 * among them, is shown as a visible escape (`\x1b`), so no tool text can
 * set the clipboard (OSC 52), clear the screen or fake a prompt.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { terminalSafe } from "./reporter.ts";
 * assert.ok(terminalSafe("a\x1b]52;c;eA==\x07b") === "a\\x1b]52;c;eA==\\x07b");
 * assert.ok(terminalSafe("line\n\ttab") === "line\n\ttab");
 * ```
 */
export function terminalSafe(text: string): string {
  return text.replace(_CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

// deno-lint-ignore no-control-regex
const _CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** Wrap `text` in an ANSI colour unless `NO_COLOR` is set. */
export function colour(text: string, name: Colour, enabled = !_noColor()): string {
  return enabled ? `\x1b[${_CODES[name]}m${text}\x1b[0m` : text;
}

/** The colour of a tool's letters: green read-only, yellow write/execute, blue none. */
export function lettersColour(permissions: string): Colour {
  if (permissions === "") return "blue";
  if (/[wx]/.test(permissions)) return "yellow";
  if (permissions.includes("n")) return "magenta";
  return "green";
}

/**
 * Writes reports to stderr (never stdout).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Reporter } from "./reporter.ts";
 * let out = "";
 * const r = new Reporter({ sink: (t) => out += t, color: false });
 * r.report("ReadFile", "r", { kind: "start", message: "Reading a.txt", options: { end: "" } });
 * r.report("ReadFile", "r", { kind: "result", message: " done" });
 * assert.ok(out === "Reading a.txt done\n");
 * ```
 */
export class Reporter {
  #sink: Sink;
  #color: boolean;
  #quiet: boolean;
  #open = false;

  /** `sink` defaults to stderr, `color` to `!NO_COLOR`. */
  constructor(options: { sink?: Sink; color?: boolean; quiet?: boolean } = {}) {
    this.#sink = options.sink ?? _stderr;
    this.#color = options.color ?? !_noColor();
    this.#quiet = options.quiet ?? false;
  }

  /** Write one report of tool `tool` with letters `permissions`. */
  report(_tool: string, permissions: string, report: Report): void {
    if (this.#quiet) return;
    const end = report.options?.end === "" ? "" : "\n";
    let text = terminalSafe(report.message);
    switch (report.kind) {
      case "start":
        text = colour(text, lettersColour(permissions), this.#color);
        break;
      case "error":
        text = colour(this.#open ? text : `Error: ${text}`, "red", this.#color);
        break;
      case "warning":
        text = colour(this.#open ? text : `Warning: ${text}`, "yellow", this.#color);
        break;
      case "result":
        text = colour(text, "green", this.#color);
        break;
      case "info":
        text = colour(text, "cyan", this.#color);
        break;
      case "progress":
        break;
    }
    this.#open = !end.includes("\n");
    this.#sink(text + end);
  }

  /** Whether this reporter prints nothing (`--quiet`). */
  get quiet(): boolean {
    return this.#quiet;
  }

  /** Close a line left open by a report with `end: ""`. */
  finish(): void {
    if (this.#open) this.#sink("\n");
    this.#open = false;
  }

  /** Print a plain line (warnings of the host itself). */
  line(text: string, name?: Colour): void {
    if (this.#quiet) return;
    if (this.#open) this.#sink("\n");
    this.#open = false;
    text = terminalSafe(text);
    this.#sink((name ? colour(text, name, this.#color) : text) + "\n");
  }
}
