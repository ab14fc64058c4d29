/**
 * Example plugin using `TOOL_SETUP` and `is_configured`: it reads its own
 * section of corral.json (`services.greeting`) once per sandbox, and skips
 * itself when that section is invalid. Configure it like:
 *
 * ```json
 * { "services": { "greeting": { "salutation": "Howdy" } } }
 * ```
 *
 * It imports zod as an npm specifier (`npm:zod@^3.25`), the form that works
 * without corral's import map; corral's lock file pins it.
 *
 * @module
 */
import { z } from "npm:zod@^3.25";

const configSchema = z.object({
  salutation: z.string().min(1).max(40).default("Hello"),
}).strict();

let config: z.infer<typeof configSchema> | undefined;
let problem = "TOOL_SETUP was not called";

/** Called once per sandbox with `services.greeting` (or `{}`). */
export function TOOL_SETUP(section: unknown): void {
  const parsed = configSchema.safeParse(section ?? {});
  if (parsed.success) config = parsed.data;
  else problem = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
}

/** False when `services.greeting` is invalid: corral then skips this plugin. */
export function is_configured(): boolean {
  if (!config) console.warn(`greeting: not configured: ${problem}`);
  return config !== undefined;
}

const input = z.object({ name: z.string().min(1).describe("Who to greet") });

/** The tools of this plugin. */
export const TOOL_CONFIGS = [
  {
    name: "Greet",
    description: "Greet someone by name with the configured salutation.",
    input_schema: input,
    function: ({ name }: z.infer<typeof input>) => ({
      success: true,
      text: `${config!.salutation}, ${name}!`,
    }),
  },
];
