/**
 * Example plugin, module style, no permission letters: text helpers that
 * touch nothing but their arguments. Each tool is a plain config object in
 * `TOOL_CONFIGS`; the schema is a zod object.
 *
 * @module
 */
import { z } from "zod";

const caseInput = z.object({
  text: z.string().describe("The text to change"),
  to: z.enum(["upper", "lower", "title"]).describe("The case to change it to"),
});

const slugInput = z.object({
  text: z.string().describe("The text to turn into a slug"),
  max_length: z.number().int().min(1).max(200).default(60).describe("Longest slug to return"),
});

/** `"hello big world"` → `"Hello Big World"`. */
export function titleCase(text: string): string {
  return text.toLowerCase().replace(/(^|[\s_-])(\p{L})/gu, (_m, sep, ch) => sep + ch.toUpperCase());
}

/** `"Hello, World!"` → `"hello-world"`. */
export function slugify(text: string, maxLength = 60): string {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, maxLength)
    .replace(/-+$/, "");
}

/** The tools of this plugin. */
export const TOOL_CONFIGS = [
  {
    name: "ChangeCase",
    description: "Change a text to upper case, lower case or title case.",
    input_schema: caseInput,
    function: ({ text, to }: z.infer<typeof caseInput>) => {
      const out = to === "upper"
        ? text.toUpperCase()
        : to === "lower"
        ? text.toLowerCase()
        : titleCase(text);
      return { success: true, text: out };
    },
  },
  {
    name: "Slugify",
    description:
      "Turn a text into a URL slug: lower case ASCII letters and digits joined by dashes.",
    input_schema: slugInput,
    function: ({ text, max_length }: z.infer<typeof slugInput>) => ({
      success: true,
      slug: slugify(text, max_length),
    }),
  },
];
