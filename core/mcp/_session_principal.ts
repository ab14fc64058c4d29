/**
 * One MCP session, one principal: its sandboxes are its own and close with
 * it (Registry.endPrincipal), unless the principal was given from outside
 * (a stateless caller's token or identity), which outlives the session.
 *
 * @module
 */

/** The principal of one MCP session and its end. */
export class SessionPrincipal {
  /** Whom the session's calls are for. */
  readonly name: string;
  #ended = false;
  /** Calls of this session running now (an idle sweep never ends a busy session). */
  running = 0;
  readonly #stop = new AbortController();

  /**
   * `given`: a principal from outside, kept when the session closes;
   * without one, a principal of its own (`session:UUID`).
   */
  constructor(
    private readonly registry: { endPrincipal?(principal: string): Promise<void> },
    private readonly given: string | undefined,
  ) {
    this.name = given ?? `session:${crypto.randomUUID()}`;
  }

  /** True once its own principal has ended (or was revoked): a call arriving now starts nothing. */
  get ended(): boolean {
    return this.#ended || this.#stop.signal.aborted;
  }

  /** Aborted when the session's credential is revoked: every call of the session stops. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /**
   * The session's credential was revoked: its calls stop now (the abort's
   * reason says so, for the audit), and no new call starts.
   */
  revoke(reason: Error): void {
    if (!this.#stop.signal.aborted) this.#stop.abort(reason);
  }

  /** End its own principal (once): its sandboxes close, with all they started. */
  end(): void {
    if (this.#ended || this.given !== undefined) return;
    this.#ended = true;
    this.registry.endPrincipal?.(this.name).catch(() => {/* closing: nothing to tell */});
  }
}
