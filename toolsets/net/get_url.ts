import { z } from "zod";
import { BaseTool, tool } from "../../core/tool.ts";
import { PermissionDeniedError } from "../../core/errors.ts";
import { runHarness } from "../../core/harness.ts";

const input = z.object({
  url: z.string().min(1).describe("The http:// or https:// address to fetch"),
  max_length: z.number().int().min(1).max(10_000_000).default(100_000).describe(
    "Keep at most this many bytes of the body; the rest is not downloaded",
  ),
  timeout: z.number().min(0.1).max(600).default(30).describe(
    "Give up after this many seconds",
  ),
});

/**
 * Fetch a web page or file over HTTP(S) and return its text. The body is
 * read as a stream and reading stops at `max_length` bytes.
 *
 * Permissions: `n` (network; the hosts it may reach are set by the policy).
 *
 * @example
 * ```sh
 * deno run -A toolsets/net/get_url.ts https://example.com --max_length 2000
 * ```
 */
@tool({
  permissions: "n",
  description: "Fetch an http(s) URL and return the status, content type and body text " +
    "(cut at max_length bytes).",
  input,
})
export class GetUrl extends BaseTool {
  /** Fetch. */
  async run(args: z.infer<typeof input>): Promise<Record<string, unknown>> {
    const { url, max_length, timeout } = args;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`invalid URL ${JSON.stringify(url)}`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TypeError(
        `only http and https URLs are allowed, got ${JSON.stringify(parsed.protocol)}`,
      );
    }
    this.reportStart(`Fetching ${parsed.href}`, { end: "" });
    const timer = new AbortController();
    const timeoutId = setTimeout(() => timer.abort(), timeout * 1000);
    const signal = AbortSignal.any([timer.signal, this.signal]);
    try {
      const response = await fetch(parsed, { signal, redirect: "follow" });
      const { bytes, truncated } = await _readCapped(response, max_length);
      const content = new TextDecoder().decode(bytes);
      const result: Record<string, unknown> = {
        success: response.ok,
        url,
        final_url: response.url || parsed.href,
        status: response.status,
        content_type: response.headers.get("content-type") ?? "",
        content,
        truncated,
        bytes: bytes.length,
      };
      if (!response.ok) {
        result.error = `Cannot run tool "GetUrl": HTTP ${response.status} ${response.statusText}`
          .trim();
      }
      this.reportResult(` ${response.status}, ${bytes.length} bytes${truncated ? " (cut)" : ""}`);
      return result;
    } catch (err) {
      if (timer.signal.aborted) throw new Error(`timed out after ${timeout} s`);
      if (this.signal.aborted) throw new Error("cancelled");
      if (err instanceof Error && err.name === "NotCapable") {
        throw new PermissionDeniedError(`no network access to ${parsed.host}`);
      }
      throw new Error(`cannot fetch ${parsed.href}: ${err instanceof Error ? err.message : err}`);
    } finally {
      clearTimeout(timeoutId);
    }
  }
}

/** Read at most `max` bytes of the body, then cancel the rest. */
async function _readCapped(
  response: Response,
  max: number,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = max - size;
      if (value.length >= room) {
        chunks.push(value.subarray(0, room));
        size += room;
        // Full. Something was left out if this chunk had more, or another follows.
        truncated = value.length > room || !(await reader.read()).done;
        break;
      }
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, truncated };
}

if (import.meta.main) await runHarness(GetUrl);
