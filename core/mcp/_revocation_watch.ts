/**
 * Revocation stops everything a token started. Every piece of live work
 * (an MCP session, a stateless request in flight) is held here with the
 * credential it was opened with (a session: the one its last request
 * carried). Every `periodMs` (default 1 s), and at once when a revocation
 * is heard (`--shared-state`: from any replica), each distinct credential
 * is checked again; work whose credential no longer names its identity
 * (revoked, expired, its JWT key rotated out) is ended: its calls are
 * cancelled and audited `denied` / `revoked`, its sessions close, and their
 * sandboxes and hosted servers are killed with all they started. A
 * credential that cannot be checked now (the tokens file or JWKS gone bad:
 * every new request is refused 500 meanwhile) ends nothing.
 *
 * @module
 */
import type { AuthResult } from "../identity/mod.ts";

/** One piece of live work. */
export interface HeldWork {
  /** Its identity. */
  identity: string;
  /** The `Authorization` header it runs under now. */
  credential(): string | null;
  /** End it: its credential is no longer valid (`why`, for the log). */
  end(why: string): void;
}

/** Checks the credentials of live work and ends the revoked. */
export class RevocationWatch {
  readonly #authenticate: (authorization: string | null) => Promise<AuthResult>;
  readonly #held = new Set<HeldWork>();
  readonly #timer: ReturnType<typeof setInterval>;
  #checking?: Promise<void>;
  #again = false;

  /** Watch with `authenticate` (core/identity/authenticator.ts), every `periodMs`. */
  constructor(
    authenticate: (authorization: string | null) => Promise<AuthResult>,
    periodMs = 1_000,
  ) {
    this.#authenticate = authenticate;
    this.#timer = setInterval(() => void this.check(), periodMs);
    Deno.unrefTimer(this.#timer);
  }

  /** Pieces of work held now. */
  get size(): number {
    return this.#held.size;
  }

  /** Hold `work` until the returned function is called (its end, whatever ended it). */
  hold(work: HeldWork): () => void {
    this.#held.add(work);
    return () => void this.#held.delete(work);
  }

  /**
   * Check every credential now (a revocation was heard); resolves once
   * the revoked work is ended. A check asked for while one runs runs after it.
   */
  check(): Promise<void> {
    if (this.#checking) {
      this.#again = true;
      return this.#checking;
    }
    this.#checking = (async () => {
      do {
        this.#again = false;
        await this.#checkAll();
      } while (this.#again);
    })().finally(() => this.#checking = undefined);
    return this.#checking;
  }

  /** Stop checking. */
  close(): void {
    clearInterval(this.#timer);
    this.#held.clear();
  }

  async #checkAll(): Promise<void> {
    const byCredential = new Map<string | null, HeldWork[]>();
    for (const w of this.#held) {
      const c = w.credential();
      byCredential.set(c, [...(byCredential.get(c) ?? []), w]);
    }
    for (const [credential, works] of byCredential) {
      let r: AuthResult;
      try {
        r = await this.#authenticate(credential);
      } catch {
        continue; // cannot be checked now: the next round tries again
      }
      for (const w of works) {
        const why = !r.ok
          ? r.status === 401 ? r.message : undefined
          : r.identity !== w.identity
          ? `the token now names "${r.identity}"`
          : undefined;
        if (why === undefined || !this.#held.has(w)) continue;
        this.#held.delete(w);
        w.end(why);
      }
    }
  }
}
