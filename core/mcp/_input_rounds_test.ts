/**
 * Attacks on the rounds of a 2026-07-28 request (./_input_rounds.ts): a
 * tampered state fails verification, a replayed, foreign (another
 * principal's) or re-aimed (another call's) state touches nothing, and a
 * question the client did not declare never goes out.
 */
import assert from "node:assert/strict";
import { InputRounds, type RoundAsk } from "./_input_rounds.ts";

const CAPS = { elicitation: {}, sampling: {}, roots: {} };
const _ask = { message: "Name?", requestedSchema: { type: "object", properties: {} } };

type Round = {
  resultType?: string;
  requestState?: string;
  inputRequests?: Record<string, unknown>;
};

/** A call that asks one named question and returns what it was told; counts its runs. */
function asker(runs: { n: number }) {
  return async (ask: RoundAsk) => {
    runs.n++;
    const a = await ask("elicitation/create", _ask, "user_name") as { content?: unknown };
    return { content: [{ type: "text", text: JSON.stringify(a.content) }] };
  };
}

const answer = { user_name: { action: "accept", content: { name: "Ada" } } };

Deno.test("a round's state is refused when tampered, replayed, another principal's or another call's", async () => {
  const rounds = new InputRounds();
  const runs = { n: 0 };
  const first = await rounds.begin("alice", "k", CAPS, asker(runs)) as Round;
  assert.equal(first.resultType, "input_required");
  assert.deepEqual(Object.keys(first.inputRequests!), ["user_name"]);
  const state = await rounds.codec.verify(first.requestState!, {} as never);
  await assert.rejects(
    rounds.codec.verify(first.requestState! + "-TAMPERED", {} as never),
    "a tampered state fails its MAC",
  );
  // Another principal, or the same principal aiming it at another call: refused, nothing resumes.
  await assert.rejects(rounds.resume(state, "mallory", "k", CAPS, answer), /requestState/);
  await assert.rejects(rounds.resume(state, "alice", "other", CAPS, answer), /requestState/);
  assert.equal(rounds.parked, 1, "the call still waits for its own client");
  const done = await rounds.resume(state, "alice", "k", CAPS, answer) as { content: unknown };
  assert.deepEqual(done.content, [{ type: "text", text: '{"name":"Ada"}' }]);
  // Replayed after it was answered: refused, the call does not run again.
  await assert.rejects(rounds.resume(state, "alice", "k", CAPS, answer), /requestState/);
  assert.equal(runs.n, 1);
  assert.equal(rounds.parked, 0);
});

Deno.test("an answer given ahead answers the tool's named question; a bad one is asked again", async () => {
  const rounds = new InputRounds();
  const runs = { n: 0 };
  const done = await rounds.begin("p", "k", CAPS, asker(runs), answer) as Round;
  assert.equal(done.resultType, undefined, "complete in one request");
  const again = await rounds.begin("p", "k", CAPS, asker(runs), { user_name: 12345 }) as Round;
  assert.equal(again.resultType, "input_required", "a number is no answer");
  // Corral's own confirmation carries no key: no answer ahead can approve it.
  const confirm = await rounds.begin("p", "k2", CAPS, async (ask) => {
    return await ask("elicitation/create", _ask);
  }, { "elicitation-1": answer.user_name }) as Round;
  assert.equal(confirm.resultType, "input_required");
});

Deno.test("a question whose capability the client did not declare never goes out; failing for it is -32021", async () => {
  const rounds = new InputRounds();
  // The call copes without it: only what the client declared is asked.
  const coped = await rounds.begin("p", "k", { sampling: {} }, async (ask) => {
    const got = await Promise.allSettled([
      ask("elicitation/create", _ask, "name"),
      ask("sampling/createMessage", { messages: [], maxTokens: 1 }, "hello"),
    ]);
    return { content: [{ type: "text", text: got.map((g) => g.status).join() }] };
  }) as Round;
  assert.deepEqual(Object.keys(coped.inputRequests!), ["hello"]);
  // The call fails for it: the client hears which capability it lacks.
  await assert.rejects(
    rounds.begin("p", "k", {}, async (ask) => {
      try {
        return await ask("sampling/createMessage", { messages: [], maxTokens: 1 });
      } catch (err) {
        return { isError: true, content: [{ type: "text", text: String(err) }] };
      }
    }),
    (err: { code?: number; data?: { requiredCapabilities?: unknown } }) =>
      err.code === -32021 && JSON.stringify(err.data?.requiredCapabilities) === '{"sampling":{}}',
  );
});
