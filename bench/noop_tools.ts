// The benchmark's no-op tool: no arguments, returns at once. Its cost is corral's cost.
import { z } from "zod";

export const TOOL_CONFIGS = [
  {
    name: "Noop",
    description: "Do nothing and succeed",
    input_schema: z.object({}),
    function: () => ({ success: true }),
  },
  {
    name: "NoopWrite",
    description: "Do nothing, holding the write letter (its sandbox has a write layer)",
    permissions: "rw",
    input_schema: z.object({}),
    function: () => ({ success: true }),
  },
];
