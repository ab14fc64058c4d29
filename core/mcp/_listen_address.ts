/**
 * Where the HTTP server listens: `--http [HOST:]PORT`, and whether a name
 * or address only reaches this machine.
 *
 * @module
 */
import { ConfigError } from "../tool/mod.ts";

/** Parse `--http [HOST:]PORT` (`8080`, `0.0.0.0:8080`, `[::1]:8080`). */
export function parseListenAddress(text: string): { hostname: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    throw new ConfigError(
      `--http needs [HOST:]PORT, like 8080 or 127.0.0.1:8080 or [::1]:8080, got "${text}"`,
    );
  }
  const host = m[1] ?? "127.0.0.1";
  return { hostname: host.startsWith("[") ? host.slice(1, -1) : host, port };
}

/** True for names and addresses that only reach this machine. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}
