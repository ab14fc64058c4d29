/**
 * What a running tool call tells its client: reports become progress
 * notifications (with a progress token) or log messages, the tool's log
 * lines `debug` messages, all in order and before the call's result.
 *
 * @module
 */
import type { LoggingLevel } from "@modelcontextprotocol/server";
import type { ReportKind, ReportOptions } from "../tool/mod.ts";
import type { CallExtra } from "./_call_extra.ts";
import type { LogLevel } from "./_log_level.ts";

const _REPORT_LEVEL: Record<ReportKind, LoggingLevel> = {
  start: "info",
  progress: "info",
  result: "info",
  info: "info",
  warning: "warning",
  error: "error",
};

/** The notifications of one call of tool `name`. */
export class CallNotifications {
  #sent = Promise.resolve();
  #last = -Infinity; // progress may start at 0
  readonly #token: string | number | undefined;

  constructor(
    private readonly extra: CallExtra,
    private readonly name: string,
    private readonly level: LogLevel,
  ) {
    this.#token = extra._meta?.progressToken as string | number | undefined;
  }

  /** Resolves when every notification sent so far has gone (or failed). */
  get sent(): Promise<void> {
    return this.#sent;
  }

  /** A log message at `level`, if the client asked for that level. */
  log = (level: LoggingLevel, data: string): void => {
    if (!this.level.allows(level)) return;
    this.#send("notifications/message", { level, logger: this.name, data });
  };

  /** A tool's report: progress with a progress token and a rising value, else a log message. */
  onReport = (kind: ReportKind, message: string, opts?: ReportOptions): void => {
    if (kind === "progress" && this.#token !== undefined) {
      const value = opts?.progress ?? (this.#last === -Infinity ? 1 : this.#last + 1);
      if (value > this.#last) {
        this.#last = value;
        const params: Record<string, unknown> = { progressToken: this.#token, progress: value };
        if (opts?.total !== undefined) params.total = opts.total;
        if (message) params.message = message;
        this.#send("notifications/progress", params);
        return;
      }
    }
    this.log(_REPORT_LEVEL[kind], message);
  };

  #send(method: string, params: Record<string, unknown>): void {
    // Chained so that notifications keep their order and precede the result.
    this.#sent = this.#sent.then(() => this.extra.sendNotification({ method, params })).catch(
      () => {/* the client went away: nothing to tell it */},
    );
  }
}
