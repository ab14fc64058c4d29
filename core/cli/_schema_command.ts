/**
 * `corral schema [NAME] [--format openai|anthropic|mcp]`: the loaded tools
 * (or the one named) as function-calling schemas (JSON on stdout). A name
 * that is not loaded says why, as `corral call` does: skipped with its
 * reason, its plugin file failed to load or was rejected, or unknown with
 * the closest names.
 *
 * @module
 */
import type { Registry } from "../registry/mod.ts";
import { ConfigError, formatSchemas, type SchemaFormat } from "../tool/mod.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";

/** Run `corral schema`; returns the exit code. */
export function schemaCommand(values: CliValues, registry: Registry, name?: string): number {
  const format = (values.format ?? "openai") as SchemaFormat;
  if (!["openai", "anthropic", "mcp"].includes(format)) {
    throw new UsageError(`--format must be openai, anthropic or mcp, got "${format}"`);
  }
  if (name === undefined) {
    out(JSON.stringify(registry.schemas(format), null, 2));
    return 0;
  }
  const tool = registry.get(name);
  if (!tool) {
    const other = registry.list().find((t) => t.name === name);
    const message = other
      ? `Tool "${name}" is not loaded: ${other.reason ?? other.status}`
      : registry.unknownToolMessage(name, true);
    // A typo is a usage error; a tool that did not load, a configuration one.
    throw message.startsWith("Unknown") ? new UsageError(message) : new ConfigError(message);
  }
  out(JSON.stringify(formatSchemas([tool], format)[0], null, 2));
  return 0;
}
