import { z } from "zod";
import { BaseTool, PermissionDeniedError, tool } from "../../core/tool/mod.ts";
import { GRANT_RULE, guardUrl, listedExplicitly, NetworkGuardError } from "../../core/guard/mod.ts";

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
 * read as a stream and reading stops at `max_length` bytes. Redirects are
 * followed by hand (at most {@link MAX_REDIRECTS}), and before every request
 * the network guard (core/guard/net_guard.ts) refuses loopback, private,
 * link-local and metadata addresses, after DNS resolution, unless the
 * policy's `net` list names that host explicitly.
 *
 * Permissions: `n` (network; the hosts it may reach are set by the policy;
 * `"*"` in the policy's `net` list means every public host).
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
    const allowed = this.context?.grant.net ?? [];
    let current = parsed;
    try {
      let response: Response | undefined;
      for (let hop = 0;; hop++) {
        await _guard(current, allowed);
        response = await fetch(current, { signal, redirect: "manual" });
        _refusedByEgress(response);
        const location = response.headers.get("location");
        if (!_REDIRECTS.has(response.status) || location === null) break;
        await response.body?.cancel().catch(() => {});
        if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(location, current);
        if (next.protocol !== "http:" && next.protocol !== "https:") {
          throw new TypeError(`redirect to a ${next.protocol} URL refused`);
        }
        current = next;
      }
      const { bytes, truncated } = await _readCapped(response, max_length);
      const content = new TextDecoder().decode(bytes);
      const result: Record<string, unknown> = {
        success: response.ok,
        url,
        final_url: current.href,
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
      if (err instanceof PermissionDeniedError) throw err;
      if (err instanceof NetworkGuardError) throw new PermissionDeniedError(err.message);
      if (err instanceof Error && err.name === "NotCapable") {
        throw new PermissionDeniedError(`no network access to ${current.host} (${GRANT_RULE.net})`);
      }
      if (/unsuccessful tunnel/.test(String((err as Error)?.cause ?? ""))) {
        throw new PermissionDeniedError(await _tunnelRefusal(current));
      }
      throw new Error(`cannot fetch ${current.href}: ${err instanceof Error ? err.message : err}`);
    } finally {
      clearTimeout(timeoutId);
    }
  }
}

/**
 * A refusal of corral's egress proxy (core/egress/egress.ts) for an `http:`
 * URL: status 403 or 502 with the reason in `X-Corral-Refused`.
 */
function _refusedByEgress(response: Response): void {
  const reason = response.headers.get("x-corral-refused");
  if (reason === null || (response.status !== 403 && response.status !== 502)) return;
  response.body?.cancel().catch(() => {});
  throw new PermissionDeniedError(decodeURIComponent(reason));
}

/**
 * Why corral's egress proxy refused the tunnel to an `https:` URL: fetch
 * hides the proxy's answer to CONNECT, so the proxy is asked (a plain
 * request with `X-Corral-Why`; it connects to nothing) for the reason it
 * gave, as it does for `http:`.
 */
async function _tunnelRefusal(url: URL): Promise<string> {
  const fallback = `refused ${url.host} by corral's egress proxy`;
  try {
    const port = url.port || "443";
    const why = await fetch(`http://${url.hostname}:${port}/`, {
      method: "HEAD",
      headers: { "x-corral-why": "1" },
      signal: AbortSignal.timeout(5000),
    });
    await why.body?.cancel().catch(() => {});
    const reason = why.headers.get("x-corral-refused");
    return reason === null ? fallback : decodeURIComponent(reason);
  } catch {
    return fallback;
  }
}

/** Redirects followed at most. */
export const MAX_REDIRECTS = 5;
const _REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Refuse hosts outside the grant and non-public addresses (see
 * core/guard/net_guard.ts) before each request, the first and every redirect.
 */
async function _guard(url: URL, allowed: string[]): Promise<void> {
  if (!allowed.includes("*") && !listedExplicitly(url, allowed)) {
    throw new PermissionDeniedError(`no network access to ${url.host} (${GRANT_RULE.net})`);
  }
  await guardUrl(url, { allowed });
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

// Run alone, the module is a command-line harness (loaded only then).
if (import.meta.main) await (await import("../../core/mod.ts")).runHarness(GetUrl);
