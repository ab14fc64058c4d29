/**
 * Example plugin, class style, no permission letters: roll dice. Shows the
 * `@tool` decorator, a zod input schema with defaults, progress reports and
 * the per-tool command line (`deno run plugins/dice.ts --count 3`).
 *
 * @module
 */
import { z } from "zod";
import { BaseTool, runHarness, tool } from "@corral/corral";

const input = z.object({
  count: z.number().int().min(1).max(100).default(1).describe("How many dice to roll"),
  sides: z.number().int().min(2).max(1000).default(6).describe("Sides of each die"),
});

/** Roll `count` dice with `sides` sides each. */
@tool({
  description: "Roll dice: `count` dice with `sides` sides each; returns every roll and the total.",
  input,
})
export class RollDice extends BaseTool {
  /** Roll. */
  run({ count, sides }: z.infer<typeof input>): Record<string, unknown> {
    this.reportStart(`Rolling ${count}d${sides}`, { end: "" });
    const rolls: number[] = [];
    const buf = new Uint32Array(count);
    crypto.getRandomValues(buf);
    for (const [i, n] of buf.entries()) {
      rolls.push((n % sides) + 1);
      this.reportProgress(".", { end: "", progress: i + 1, total: count });
    }
    const total = rolls.reduce((a, b) => a + b, 0);
    this.reportResult(` total ${total}`);
    return { success: true, rolls, total };
  }
}

if (import.meta.main) await runHarness(RollDice);
