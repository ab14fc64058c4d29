// Fair capacity, tried as a member who floods: alice sends 100-call batches over 8
// connections without pause while bob makes one call at a time. Her calls wait in her own
// queue (capped: the rest refused at once), queues are served round robin, and she may run at
// most half the slots, so bob's median call stays within 3 times its quiet median (a ratio
// measured in the same run, not a time).
import assert from "node:assert/strict";
import { openSession, postHeaders, rpcAnswers, teamCorral, toolCall } from "../../_team_helpers.ts";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

Deno.test("a member flooding batches keeps another member's median call within 3x of its quiet median", async () => {
  await using t = await teamCorral({ alice: {}, bob: {} });
  const bob = String(await openSession(t.url, t.tokens.bob));
  const alice = String(await openSession(t.url, t.tokens.alice));
  let id = 1;
  const bobCall = async (): Promise<number> => {
    const t0 = performance.now();
    const r = await fetch(t.url, {
      method: "POST",
      headers: postHeaders(t.tokens.bob, bob),
      body: JSON.stringify(toolCall(id++, "E2eSleep", { ms: 0 })),
    });
    const [answer] = await rpcAnswers(r);
    assert.equal((answer.result as { isError?: boolean }).isError, false, JSON.stringify(answer));
    return performance.now() - t0;
  };
  const sample = async (n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(await bobCall());
    return out;
  };
  await sample(5); // bob's sandbox started, warm
  const quietBefore = await sample(30);
  let flooding = true;
  let refused = 0, ran = 0;
  // Ids unique in her session (the answers of a request are found by id).
  const batch = () =>
    JSON.stringify(Array.from({ length: 100 }, () => toolCall(id++, "E2eSleep", { ms: 200 })));
  const floods = Array.from({ length: 8 }, async () => {
    while (flooding) {
      const r = await fetch(t.url, {
        method: "POST",
        headers: postHeaders(t.tokens.alice, alice),
        body: batch(),
      });
      if (r.status !== 200) {
        await r.body?.cancel();
        continue;
      }
      for (const a of await rpcAnswers(r)) {
        if ((a.result as { isError?: boolean })?.isError) refused++;
        else ran++;
      }
    }
  });
  await new Promise((r) => setTimeout(r, 1000)); // her queue is full by now
  const busy = await sample(30);
  flooding = false;
  await Promise.all(floods);
  const quietAfter = await sample(30);
  const quiet = median([...quietBefore, ...quietAfter]);
  const flooded = median(busy);
  assert.ok(refused > 0, "her calls beyond her queue were refused");
  assert.ok(ran > 0, "her calls ran too");
  assert.ok(
    flooded <= 3 * quiet,
    `bob's median call: ${flooded.toFixed(1)} ms under the flood, ${quiet.toFixed(1)} ms quiet`,
  );
});
