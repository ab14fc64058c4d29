/**
 * Questions to a 2026-07-28 client as rounds of one request
 * (`InputRequiredResult`): a call that asks (confirmation, `ctx.elicit`,
 * `ctx.sample`, a hosted server's question) is parked while it waits; the
 * request is answered with the questions (`inputRequests`) and a
 * `requestState` that corral signs (HMAC, the SDK's codec, this instance's
 * own key, ten minutes). The client's retry carries the answers and the
 * state back: the state must verify (else the SDK refuses it, -32602), name
 * a parked call of the same principal, tool and arguments, and its current
 * round, so that a tampered, foreign or replayed state is refused and
 * touches nothing. The call then goes on in its sandbox, to its result or
 * the next round. A parked call nobody resumes is cancelled after
 * {@link ROUND_TIMEOUT_MS}, like an unanswered question today.
 *
 * The rounds need the parked call in this process: a retry that reaches
 * another replica is refused (state unknown here), never run twice.
 *
 * @module
 */
import {
  createRequestStateCodec,
  type InputRequiredResult,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type RequestStateCodec,
} from "@modelcontextprotocol/server";

/** How long a parked call waits for its client's next round. */
export const ROUND_TIMEOUT_MS = 10 * 60_000;
/** Questions asked within this time of each other go out in one round. */
const _GATHER_MS = 25;

/** What the signed state holds (readable by the client: nothing secret). */
interface _State {
  call: string;
  round: number;
}

interface _Ask {
  request: { method: string; params: Record<string, unknown> };
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** One parked call. */
interface _Parked {
  principal: string;
  key: string;
  round: number;
  asks: Map<string, _Ask>;
  /** Resolves with the call's result, once. */
  done: Promise<unknown>;
  /** Wakes the waiter when a question arrives. */
  wake?: () => void;
  /** Told when its open questions change (a task's holder, ./tasks/). */
  changed?: () => void;
  timer?: ReturnType<typeof setTimeout>;
  cancel(why?: Error): void;
  n: number;
  /** Every key a question of this call was put under: never reused for another question. */
  used: Set<string>;
  /** The capabilities the client declared on its latest request of this call. */
  caps: Record<string, unknown>;
  /** Capabilities a question needed that the client had not declared. */
  missing?: Record<string, Record<string, never>>;
  /** Answers the first request gave ahead, by the tool's names for its questions. */
  ahead: Record<string, unknown>;
}

/**
 * A question of a call, as the call asks it; `key` is the tool's own name
 * for it (its key in `inputRequests`), else corral names it.
 */
export type RoundAsk = (
  method: string,
  params: Record<string, unknown>,
  key?: string,
) => Promise<unknown>;

/** The parked calls of one instance (every request of every principal). */
export class InputRounds {
  readonly #parked = new Map<string, _Parked>();
  readonly codec: RequestStateCodec<_State>;

  constructor(key: Uint8Array = crypto.getRandomValues(new Uint8Array(32))) {
    this.codec = createRequestStateCodec<_State>({ key, ttlSeconds: ROUND_TIMEOUT_MS / 1000 });
  }

  /**
   * Run `start` (a call that may ask through the given {@link RoundAsk}) as
   * the first round: its result, or an input-required result.
   * `key` binds the state to the call (tool and arguments), `principal` to
   * its caller; `capabilities` are the client's, declared on this request.
   */
  async begin(
    principal: string,
    key: string,
    capabilities: Record<string, unknown>,
    start: (ask: RoundAsk, signal: AbortSignal) => Promise<unknown>,
    ahead: Record<string, unknown> = {},
  ): Promise<unknown> {
    const id = crypto.randomUUID();
    const abort = new AbortController();
    const parked: _Parked = {
      principal,
      key,
      round: 0,
      asks: new Map(),
      done: Promise.resolve(),
      cancel: (why = new Error("the client did not answer in time")) => abort.abort(why),
      n: 0,
      used: new Set(),
      caps: capabilities,
      ahead: _answers(ahead),
    };
    parked.done = start((method, params, name) => _ask(parked, method, params, name), abort.signal);
    this.#parked.set(id, parked);
    return await this.#next(id, parked);
  }

  /**
   * Start `start` as a call no request waits for (a task, ./tasks/): its
   * questions wait in the returned {@link ParkedCall} until answered there.
   * No request state names it: only its holder reaches it.
   */
  detach(
    principal: string,
    key: string,
    capabilities: Record<string, unknown>,
    start: (ask: RoundAsk, signal: AbortSignal) => Promise<unknown>,
  ): ParkedCall {
    const abort = new AbortController();
    const parked: _Parked = {
      principal,
      key,
      round: 0,
      asks: new Map(),
      done: Promise.resolve(),
      cancel: (why = new Error("cancelled")) => abort.abort(why),
      n: 0,
      used: new Set(),
      caps: capabilities,
      ahead: {},
    };
    parked.done = start((method, params, name) => _ask(parked, method, params, name), abort.signal);
    return _held(parked);
  }

  /**
   * A retry whose call goes on as a task (./tasks/): like {@link resume}
   * (the same checks of `state`), the answers go to its open questions, and
   * the call leaves the rounds: no state reaches it any more, its holder does.
   */
  adopt(
    state: unknown,
    principal: string,
    key: string,
    capabilities: Record<string, unknown>,
    responses: Record<string, unknown> | undefined,
  ): ParkedCall {
    const { id, parked } = this.#waiting(state, principal, key);
    this.#parked.delete(id);
    clearTimeout(parked.timer);
    parked.caps = capabilities;
    const held = _held(parked);
    held.answer(responses);
    return held;
  }

  /** The parked call `state` names, if it is `principal`'s with `key` at its current round. */
  #waiting(state: unknown, principal: string, key: string): { id: string; parked: _Parked } {
    const s = state as Partial<_State> | undefined;
    const parked = typeof s?.call === "string" ? this.#parked.get(s.call) : undefined;
    if (
      !parked || parked.principal !== principal || parked.key !== key || parked.round !== s!.round
    ) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        "Invalid or expired requestState: no such call waits for this round (replayed, " +
          "foreign or already answered)",
      );
    }
    return { id: s!.call!, parked };
  }

  /**
   * A retry: `state` (verified by the SDK with {@link codec}) must name a
   * parked call of `principal` with `key`, at its current round; the
   * answers go to its open questions, then the next round or the result.
   */
  async resume(
    state: unknown,
    principal: string,
    key: string,
    capabilities: Record<string, unknown>,
    responses: Record<string, unknown> | undefined,
  ): Promise<unknown> {
    const { id, parked } = this.#waiting(state, principal, key);
    parked.round++;
    parked.caps = capabilities;
    // An answer that is no object leaves its question open: it is asked again next round.
    _deliver(parked, responses);
    return await this.#next(id, parked);
  }

  /** Wait for the result or the next questions of `parked`. */
  async #next(id: string, parked: _Parked): Promise<unknown> {
    clearTimeout(parked.timer);
    const asked = () =>
      new Promise<"asked">((resolve) => {
        if (parked.asks.size) return resolve("asked");
        parked.wake = () => resolve("asked");
      });
    const first = await Promise.race([
      parked.done.then(() => "done" as const, () => "done"),
      asked(),
    ]);
    parked.wake = undefined;
    if (first === "done") {
      this.#parked.delete(id);
      const result = await parked.done as { isError?: boolean } | undefined;
      // A call that failed for want of a capability the client did not declare: the spec's -32021.
      if (parked.missing && result?.isError) {
        throw new MissingRequiredClientCapabilityError({ requiredCapabilities: parked.missing });
      }
      return result;
    }
    // Questions asked together (Promise.all in a tool) go out in one round.
    await new Promise((r) => setTimeout(r, _GATHER_MS));
    if (!parked.asks.size) return await this.#next(id, parked);
    parked.timer = setTimeout(() => this.#drop(id, parked), ROUND_TIMEOUT_MS);
    Deno.unrefTimer(parked.timer);
    const inputRequests: Record<string, unknown> = {};
    for (const [name, a] of parked.asks) inputRequests[name] = a.request;
    const requestState = await this.codec.mint({ call: id, round: parked.round });
    return { resultType: "input_required", inputRequests, requestState } as InputRequiredResult;
  }

  /** Give up on `parked`: its questions fail, its call is cancelled. */
  #drop(id: string, parked: _Parked): void {
    this.#parked.delete(id);
    clearTimeout(parked.timer);
    for (const a of parked.asks.values()) a.reject(new Error("the client did not answer"));
    parked.asks.clear();
    parked.cancel();
  }

  /** Calls parked now (for tests and telemetry). */
  get parked(): number {
    return this.#parked.size;
  }
}

/** A call held outside the rounds (a task's, ./tasks/): its questions, answered by its holder. */
export interface ParkedCall {
  /** Its open questions, by key (`inputRequests`). */
  questions(): Record<string, { method: string; params: Record<string, unknown> }>;
  /** Answer open questions; other keys and answers that are no object are ignored. */
  answer(responses: Record<string, unknown> | undefined): void;
  /** Settles with the call's result. */
  readonly done: Promise<unknown>;
  /** Capabilities a question needed that the client had not declared. */
  missing(): Record<string, Record<string, never>> | undefined;
  /** Stop it: its open questions fail, its signal aborts with `why`. */
  cancel(why: Error): void;
  /** Call `fn` whenever its open questions change (one listener: the task's). */
  onChange(fn: () => void): void;
}

function _held(parked: _Parked): ParkedCall {
  return {
    questions: () => {
      const out: Record<string, { method: string; params: Record<string, unknown> }> = {};
      for (const [name, a] of parked.asks) out[name] = a.request;
      return out;
    },
    answer: (responses) => _deliver(parked, responses),
    done: parked.done,
    missing: () => parked.missing,
    cancel: (why) => {
      for (const a of parked.asks.values()) a.reject(why);
      parked.asks.clear();
      parked.cancel(why);
    },
    onChange: (fn) => {
      parked.changed = fn;
    },
  };
}

/** Give each open question of `parked` its answer in `responses`, if any. */
function _deliver(parked: _Parked, responses: Record<string, unknown> | undefined): void {
  for (const [name, value] of Object.entries(_answers(responses))) {
    const open = parked.asks.get(name);
    if (!open) continue;
    parked.asks.delete(name);
    open.resolve(value);
  }
  parked.changed?.();
}

const _NEEDS: Record<string, string> = {
  "sampling/createMessage": "sampling",
  "elicitation/create": "elicitation",
  "roots/list": "roots",
};

/**
 * Put a question of `parked`: refused at once when the client did not
 * declare its capability (remembered: a call that fails for it is -32021),
 * answered at once when the first request answered it ahead, else open
 * until a round brings its answer.
 */
function _ask(
  parked: _Parked,
  method: string,
  params: Record<string, unknown>,
  key: string | undefined,
): Promise<unknown> {
  const cap = _NEEDS[method];
  if (cap && parked.caps[cap] === undefined) {
    (parked.missing ??= {})[cap] = {};
    return Promise.reject(
      new Error(`the client did not declare the ${cap} capability (${method}) on this request`),
    );
  }
  if (key !== undefined && key in parked.ahead) {
    const answer = parked.ahead[key];
    delete parked.ahead[key];
    return Promise.resolve(answer);
  }
  return new Promise((resolve, reject) => {
    let name = key ?? `${method.split("/")[0]}-${++parked.n}`;
    while (parked.asks.has(name) || parked.used.has(name)) {
      name = `${key ?? method.split("/")[0]}-${++parked.n}`;
    }
    parked.used.add(name);
    parked.asks.set(name, { request: { method, params }, resolve, reject });
    parked.wake?.();
    parked.changed?.();
  });
}

/** The answers of `responses` that can be answers at all (objects); the rest are dropped. */
function _answers(responses: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!responses || typeof responses !== "object" || Array.isArray(responses)) return out;
  for (const [name, value] of Object.entries(responses)) {
    if (typeof value === "object" && value !== null && !Array.isArray(value)) out[name] = value;
  }
  return out;
}
