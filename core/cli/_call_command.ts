/**
 * `corral call NAME [--args JSON] [--yes] [--timeout MS]`: run one tool in
 * its sandbox and print the result object as JSON. `--args -` reads the
 * arguments from stdin; without `--args` the tool gets `{}`, so its
 * defaults (a required parameter left out is named). Tools that need
 * confirmation ask on a terminal.
 *
 * @module
 */
import type { Registry, ToolInfo } from "../registry/mod.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { ConfigError, summarizeContent, terminalSafe } from "../tool/mod.ts";
import { out } from "./_output.ts";
import { keepNextLaunch } from "./prestart_recipe.ts";

async function _readStdin(): Promise<string> {
  return await new Response(Deno.stdin.readable).text();
}

function _parseArgsJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--args is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new UsageError('--args must be a JSON object, like \'{"filepath": "README.md"}\'');
  }
  return value;
}

async function _askOnTerminal(tool: ToolInfo, args: unknown): Promise<boolean> {
  const prompt = `Run ${tool.name} ${JSON.stringify(args)}? [y/N] `;
  Deno.stderr.writeSync(new TextEncoder().encode(prompt));
  const buf = new Uint8Array(256);
  const n = await Deno.stdin.read(buf);
  const answer = n ? new TextDecoder().decode(buf.subarray(0, n)).trim().toLowerCase() : "";
  return answer === "y" || answer === "yes";
}

async function _readLine(prompt: string): Promise<string> {
  Deno.stderr.writeSync(new TextEncoder().encode(terminalSafe(prompt)));
  const buf = new Uint8Array(4096);
  const n = await Deno.stdin.read(buf);
  return n ? new TextDecoder().decode(buf.subarray(0, n)).replace(/\r?\n$/, "") : "";
}

/**
 * A tool's questions on the CLI: elicitation asks the person at the
 * terminal, field by field (empty keeps the default; "!" declines);
 * sampling has no LLM to ask here.
 */
async function _answerOnTerminal(kind: string, params: unknown): Promise<unknown> {
  if (kind !== "elicit") {
    throw new Error("corral call has no LLM to sample from; use an MCP client");
  }
  const p = params as {
    message?: string;
    requestedSchema?: { properties?: Record<string, Record<string, unknown>> };
  };
  Deno.stderr.writeSync(
    new TextEncoder().encode(terminalSafe(`${p.message ?? "The tool asks:"}\n`)),
  );
  const content: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(p.requestedSchema?.properties ?? {})) {
    const hint = field.default !== undefined ? ` [${JSON.stringify(field.default)}]` : "";
    const answer = await _readLine(
      `  ${key}${field.description ? ` (${field.description})` : ""}${hint}: `,
    );
    if (answer === "!") return { action: "decline" };
    const raw = answer === "" ? field.default : answer;
    if (raw === undefined) continue;
    content[key] = field.type === "number" || field.type === "integer"
      ? Number(raw)
      : field.type === "boolean"
      ? raw === true || /^(y|yes|true)$/i.test(String(raw))
      : raw;
  }
  return { action: "accept", content };
}

/** Run `corral call NAME [--args JSON]`; returns the exit code (1 when the tool failed). */
export async function callCommand(
  values: CliValues,
  name: string | undefined,
  registry: Registry,
): Promise<number> {
  if (!name) throw new UsageError("call needs a tool name: corral call NAME --args '{...}'");
  // No --args: {}, the tool's defaults (a required parameter left out is named).
  const text = values.args === undefined
    ? "{}"
    : values.args === "-"
    ? await _readStdin()
    : values.args;
  const args = _parseArgsJson(text);
  const timeoutMs = _timeoutMs(values.timeout);
  // This start's warnings, once, but not those about other tools (their collisions: corral list).
  for (const w of new Set(registry.warnings)) {
    const about = /^Warning: tool "([^"]*)" /.exec(w)?.[1];
    if (about === undefined || about === name) registry.reporter.line(w, "yellow");
  }
  const interactive = values.args !== "-" && Deno.stdin.isTerminal();
  const confirm = values.yes ? () => true : interactive ? _askOnTerminal : undefined;
  // This call's sandbox is the one the next identical call starts ahead, loading this tool's module.
  keepNextLaunch(registry.get(name)?.source);
  let result;
  try {
    result = await registry.call(name, args, {
      timeoutMs,
      confirm,
      // Without a terminal no one can answer: the tool gets a clear error.
      ...(interactive ? { onAsk: _answerOnTerminal } : {}),
    });
  } catch (err) {
    throw err instanceof TypeError ? _notCallable(err, name, registry) : err;
  }
  // Base64 of images and audio is summarized: a terminal gets nothing to decode.
  out(JSON.stringify(summarizeContent(result), null, 2));
  return result.success ? 0 : 1;
}

/** `--timeout MS`, checked; undefined when not given. */
function _timeoutMs(given: string | undefined): number | undefined {
  if (given === undefined) return undefined;
  const timeoutMs = Number(given);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new UsageError(`--timeout must be a positive number of milliseconds, got "${given}"`);
  }
  return timeoutMs;
}

/**
 * A tool the registry cannot call: a typo is a usage error, a tool whose
 * file did not load a configuration one, named with the full paths (the
 * operator's own terminal).
 */
function _notCallable(err: TypeError, name: string, registry: Registry): Error {
  const message = registry.list().some((t) => t.name === name)
    ? err.message
    : registry.unknownToolMessage(name, true);
  return message.startsWith("Unknown") ? new UsageError(message) : new ConfigError(message);
}
