/**
 * How much a session logs to its client: `logging/setLevel` sets the least
 * level of the `notifications/message` its calls send.
 *
 * @module
 */
import type { LoggingLevel, Server } from "@modelcontextprotocol/server";

const _LEVELS: LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/** The least level a session sends; the client changes it with `logging/setLevel`. */
export class LogLevel {
  // Until a client asks for more with logging/setLevel, only warnings and
  // errors are sent: each call then costs one message, not one per report.
  #min: LoggingLevel | "off" = "warning";

  /**
   * A fixed level: a 2026-07-28 request names its own in `_meta`
   * (`io.modelcontextprotocol/logLevel`), and without one gets no log messages.
   */
  static of(level: unknown): LogLevel {
    const l = new LogLevel();
    l.#min = _LEVELS.includes(level as LoggingLevel) ? level as LoggingLevel : "off";
    return l;
  }

  /** Answer `logging/setLevel` on `server` (before it connects). */
  serve(server: Server): this {
    server.setRequestHandler("logging/setLevel", (request) => {
      this.#min = request.params.level;
      return {};
    });
    return this;
  }

  /** True when a message at `level` is to be sent. */
  allows(level: LoggingLevel): boolean {
    return this.#min !== "off" && _LEVELS.indexOf(level) >= _LEVELS.indexOf(this.#min);
  }
}
