/**
 * `corral schema [--format openai|anthropic|mcp]`: the loaded tools as
 * function-calling schemas (JSON on stdout).
 *
 * @module
 */
import type { Registry } from "../registry/registry.ts";
import type { SchemaFormat } from "../tool/schema.ts";
import { type CliValues, UsageError } from "./options.ts";
import { out } from "./output.ts";

/** Run `corral schema`; returns the exit code. */
export function schemaCommand(values: CliValues, registry: Registry): number {
  const format = (values.format ?? "openai") as SchemaFormat;
  if (!["openai", "anthropic", "mcp"].includes(format)) {
    throw new UsageError(`--format must be openai, anthropic or mcp, got "${format}"`);
  }
  out(JSON.stringify(registry.schemas(format), null, 2));
  return 0;
}
