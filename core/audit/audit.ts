/**
 * The audit log: one JSON line per tool call (and per ask, connection,
 * settlement and held set: ./audit_record.ts), appended to a file and
 * flushed per call; reading it back and summing it up: ./audit_query.ts.
 *
 * A line is written with ONE append-mode write of the whole line (the file
 * is opened `O_APPEND` by its path for each line, so the kernel places each
 * write at the end, and a log rotated, removed or replaced is followed at
 * once), and the writes of one process are synchronous, one after another,
 * so concurrent calls never interleave a line. The price of synchronous
 * writes: a log on a file system that hangs holds up the whole process, not
 * only the calls waiting for their lines (a local file takes ≈ 3 µs).
 *
 * No caller can fill the disk nor bury the log: every line is bounded
 * (./audit_line.ts); the log rotates by size ({@link rotateIfFull}), so
 * that its total on disk stays under a bound whoever calls; and refusals
 * are counted rather than written one by one ({@link RefusalTally}).
 *
 * @module
 */
import { AUDIT_FIELD_CAP, capText, encodeLine } from "./audit_line.ts";
import type { AnyAuditRecord, AuditRecord, AuditRefusalsRecord } from "./audit_record.ts";

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  /**
   * The total of the log and its rotated files ({@link rotateIfFull};
   * default 1 GiB, `audit_max_bytes`); 0 never rotates.
   */
  maxBytes?: number;
  /** Refusals are counted per identity and reason over windows this long (default 60 s). */
  refusalWindowMs?: number;
}

/**
 * An append-only audit file. Lines of concurrent calls never interleave;
 * every line is bounded (./audit_line.ts); the file rotates by size
 * ({@link rotateIfFull}); refusals are counted rather than written one by
 * one ({@link RefusalTally}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuditLog } from "./audit.ts";
 * const path = await Deno.makeTempFile();
 * const log = new AuditLog(path);
 * await log.append({ time: new Date().toISOString(), tool: "X", toolset: "t", source: "builtin", letters: "", grant: null, isolation: "worker", args_sha256: "", duration_ms: 1, outcome: "success", identity: "local", session: "local" });
 * assert.ok((await Deno.readTextFile(path)).endsWith("\n"));
 * ```
 */
export class AuditLog {
  readonly path: string;
  /** The total of the log and its rotated files (0: no rotation). */
  readonly maxBytes: number;
  readonly #tally: RefusalTally;
  #timer?: ReturnType<typeof setTimeout>;

  constructor(path: string, options: AuditLogOptions = {}) {
    this.path = path;
    this.maxBytes = options.maxBytes ?? DEFAULT_AUDIT_MAX_BYTES;
    this.#tally = new RefusalTally(options.refusalWindowMs);
  }

  /**
   * Throw when a line could not be written now (the file cannot be opened
   * for appending): the caller refuses the call instead of running it
   * unaudited. Synchronous open and close (≈ 2 µs; the async ones cost
   * ≈ 16 µs and an event-loop turn at every call).
   */
  check(): Promise<void> {
    try {
      Deno.openSync(this.path, { append: true, create: true }).close();
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Append one record as one line (one write, append mode: the file is
   * opened `O_APPEND` for it, by its path, as {@link check} did). Encoding
   * never throws: a record JSON cannot hold is written with its `args`
   * replaced by a marker (or, failing that, its plain fields only); only a
   * failed write rejects. The write is synchronous (open, one write, close:
   * ≈ 3 µs against ≈ 35 µs for the async one), so the lines of one process
   * are written one after another in call order, never interleaved. Then
   * the file rotates if it is full.
   */
  append(record: AnyAuditRecord): Promise<void> {
    try {
      Deno.writeTextFileSync(this.path, encodeLine(record), { append: true, create: true });
      rotateIfFull(this.path, this.maxBytes);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * A refused call (`denied`) of `identity` for `reason`: its line (made by
   * `record`, only when written) is written in full when it is the first of
   * its identity and reason in the current window, else counted; each
   * window's count is one `kind: "refusals"` line when it ends. So a caller
   * refused a million times writes a few lines a minute, and the refusals
   * that are only counted cost no encoding.
   */
  refusal(
    refused: { identity: string; reason: string; tool: string },
    record: () => AuditRecord | Promise<AuditRecord>,
  ): Promise<void> {
    const now = performance.now();
    const due = this.#tally.due(now);
    const tool = capText(refused.tool, AUDIT_FIELD_CAP);
    const first = this.#tally.admit(refused.identity, refused.reason, tool, now);
    for (const line of due) this.append(line).catch(() => {/* best effort: the next try */});
    this.#schedule(now);
    return first ? Promise.resolve(record()).then((r) => this.append(r)) : Promise.resolve();
  }

  /** Write the counted refusals of every window now (when the log is closed). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const line of this.#tally.due(performance.now(), true)) {
      this.append(line).catch(() => {/* closing: nothing to tell */});
    }
  }

  #schedule(now: number): void {
    const next = this.#tally.nextDue;
    if (this.#timer !== undefined || next === undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const at = performance.now();
      for (const line of this.#tally.due(at)) this.append(line).catch(() => {});
      this.#schedule(at);
    }, Math.max(0, next - now) + 5);
    Deno.unrefTimer(this.#timer);
  }
}

/** Default total of the audit log and its rotated files: 1 GiB (`audit_max_bytes`). */
export const DEFAULT_AUDIT_MAX_BYTES = 1024 ** 3;
/** How many rotated files are kept beside the current one. */
export const AUDIT_ROTATED_FILES = 4;

/**
 * The rotated files of the log at `path`, newest first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rotatedPaths } from "./audit.ts";
 * assert.deepEqual(rotatedPaths("/l/a.jsonl").slice(0, 2), ["/l/a.jsonl.1", "/l/a.jsonl.2"]);
 * ```
 */
export function rotatedPaths(path: string): string[] {
  return Array.from({ length: AUDIT_ROTATED_FILES }, (_, i) => `${path}.${i + 1}`);
}

/**
 * Rotate the log at `path` when it holds its share of `maxBytes` (a fifth);
 * 0 never rotates. Synchronous, like the writes (a stat per line, ≈ 1 µs).
 * The log is the current file and {@link AUDIT_ROTATED_FILES} older ones
 * (`PATH.1` newest … `PATH.4` oldest), each at most a fifth of the total,
 * so its total on disk stays under `maxBytes` whoever calls. Several
 * processes may append to one log: rotation happens under an exclusive
 * lock on the current file, and only when that file is still the full one
 * once the lock is held, so two writers never rotate twice.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rotateIfFull } from "./audit.ts";
 * const path = `${await Deno.makeTempDir()}/audit.jsonl`;
 * await Deno.writeTextFile(path, "x".repeat(300));
 * rotateIfFull(path, 1000); // a fifth is 200 bytes: full
 * assert.equal((await Deno.stat(`${path}.1`)).size, 300);
 * await assert.rejects(Deno.stat(path));
 * ```
 */
export function rotateIfFull(path: string, maxBytes: number): void {
  if (maxBytes <= 0) return;
  const segment = Math.max(1, Math.floor(maxBytes / (AUDIT_ROTATED_FILES + 1)));
  let file: Deno.FsFile;
  try {
    if (Deno.statSync(path).size < segment) return;
    file = Deno.openSync(path, { read: true });
  } catch {
    return; // gone: rotated by another process
  }
  try {
    file.lockSync(true);
    const now = Deno.statSync(path);
    // Another writer rotated it while this one waited for the lock: nothing to do.
    if (now.ino !== file.statSync().ino || now.size < segment) return;
    const rotated = rotatedPaths(path);
    for (let i = rotated.length - 1; i > 0; i--) _move(rotated[i - 1], rotated[i]);
    _move(path, rotated[0]);
  } finally {
    file.close(); // releases the lock
  }
}

function _move(from: string, to: string): void {
  try {
    Deno.renameSync(from, to);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Default length of a window: one summary line per identity and reason per minute at most. */
export const DEFAULT_REFUSAL_WINDOW_MS = 60_000;

/** Pairs of identity and reason tracked in one window, at most. */
const _MAX_KEYS = 1000;
/** Tools named in one summary line, at most (the rest counted under `(other tools)`). */
const _MAX_TOOLS = 20;

interface _Window {
  identity: string;
  reason: string;
  since: number;
  count: number;
  tools: Map<string, number>;
}

/**
 * Counts refusals per identity and reason in windows of `windowMs`, so
 * that they are not written one by one: a caller refused a thousand times
 * a second (its rate limit, a full queue, unknown tools, bad arguments)
 * must not fill the disk. Per identity and reason, the first refusal of a
 * window is written in full; the others of that window are counted and
 * written as one line when the window ends (`kind: "refusals"`, with the
 * count and the count per tool). The number of identity and reason pairs
 * tracked at once is bounded too: beyond it, refusals are counted under
 * the identity `(others)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RefusalTally } from "./audit.ts";
 * const tally = new RefusalTally(1000);
 * assert.equal(tally.admit("alice", "rate_limit", "ReadFile", 0), true); // written in full
 * assert.equal(tally.admit("alice", "rate_limit", "ReadFile", 10), false); // counted
 * assert.equal(tally.admit("bob", "rate_limit", "ReadFile", 20), true);
 * const [line] = tally.due(1000);
 * assert.equal(line.count, 1);
 * assert.deepEqual(line.tools, { ReadFile: 1 });
 * assert.equal(tally.admit("alice", "rate_limit", "ReadFile", 1001), true); // a new window
 * ```
 */
export class RefusalTally {
  readonly #windowMs: number;
  readonly #windows = new Map<string, _Window>();
  readonly #ended: _Window[] = [];
  /** No window ends before this (a refusal does not scan every window). */
  #earliest = Infinity;

  constructor(windowMs: number = DEFAULT_REFUSAL_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /** The end of the earliest open window (ms, on the clock `admit` was given), or undefined. */
  get nextDue(): number | undefined {
    let next: number | undefined;
    for (const w of this.#windows.values()) {
      const end = w.since + this.#windowMs;
      if (next === undefined || end < next) next = end;
    }
    return next;
  }

  /**
   * One refusal of `identity` for `reason` (a call of `tool`) at `now`
   * (ms): true when it opens a window (write its line in full), false when
   * it is counted into the window's summary.
   */
  admit(identity: string, reason: string, tool: string, now: number): boolean {
    let key = `${identity}\0${reason}`;
    if (!this.#windows.has(key) && this.#windows.size >= _MAX_KEYS) {
      identity = "(others)";
      key = `${identity}\0${reason}`;
    }
    const w = this.#windows.get(key);
    if (w && now - w.since < this.#windowMs) return this.#count(w, tool);
    if (w) this.#ended.push(w); // ended, not yet taken by `due`
    this.#windows.set(key, { identity, reason, since: now, count: 0, tools: new Map() });
    this.#earliest = Math.min(this.#earliest, now + this.#windowMs);
    return true;
  }

  /** The summary lines of every window that ended by `now` (all of them with `all`). */
  due(now: number, all = false): AuditRefusalsRecord[] {
    if (!all && !this.#ended.length && now < this.#earliest) return [];
    const ended = this.#ended.splice(0);
    this.#earliest = Infinity;
    for (const [key, w] of this.#windows) {
      const end = w.since + this.#windowMs;
      if (!all && end > now) {
        this.#earliest = Math.min(this.#earliest, end);
        continue;
      }
      this.#windows.delete(key);
      ended.push(w);
    }
    const out: AuditRefusalsRecord[] = [];
    for (const w of ended) {
      const end = w.since + this.#windowMs;
      if (w.count === 0) continue;
      out.push({
        time: new Date(_wall(Math.min(end, now))).toISOString(),
        kind: "refusals",
        identity: w.identity,
        reason: w.reason,
        outcome: "denied",
        count: w.count,
        since: new Date(_wall(w.since)).toISOString(),
        tools: Object.fromEntries(w.tools),
      });
    }
    return out;
  }

  #count(w: _Window, tool: string): false {
    w.count++;
    const name = w.tools.has(tool) || w.tools.size < _MAX_TOOLS ? tool : "(other tools)";
    w.tools.set(name, (w.tools.get(name) ?? 0) + 1);
    return false;
  }
}

/** Wall-clock ms for a `performance.now()` reading (the tally's clock in use). */
function _wall(perf: number): number {
  return performance.timeOrigin + perf;
}
