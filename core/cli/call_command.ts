/**
 * `corral call NAME --args JSON [--yes] [--timeout MS]`: run one tool in its
 * sandbox and print the result object as JSON. `--args -` reads the
 * arguments from stdin. Tools that need confirmation ask on a terminal.
 *
 * @module
 */
import type { Registry, ToolInfo } from "../registry/registry.ts";
import { type CliValues, UsageError } from "./options.ts";
import { out } from "./output.ts";

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

/** Run `corral call NAME --args JSON`; returns the exit code (1 when the tool failed). */
export async function callCommand(
  values: CliValues,
  name: string | undefined,
  registry: Registry,
): Promise<number> {
  if (!name) throw new UsageError("call needs a tool name: corral call NAME --args '{...}'");
  if (values.args === undefined) {
    throw new UsageError(`call needs --args (a JSON object, or - for stdin)`);
  }
  const args = _parseArgsJson(values.args === "-" ? await _readStdin() : values.args);
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw new UsageError(
        `--timeout must be a positive number of milliseconds, got "${values.timeout}"`,
      );
    }
  }
  const interactive = values.args !== "-" && Deno.stdin.isTerminal();
  const confirm = values.yes ? () => true : interactive ? _askOnTerminal : undefined;
  let result;
  try {
    result = await registry.call(name, args, { timeoutMs, confirm });
  } catch (err) {
    if (err instanceof TypeError) throw new UsageError(err.message);
    throw err;
  }
  out(JSON.stringify(result, null, 2));
  return result.success ? 0 : 1;
}
