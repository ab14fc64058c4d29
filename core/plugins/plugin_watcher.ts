/**
 * Watch file-drop plugin directories and keep a registry in step: a plugin
 * file added, changed or removed is loaded, reloaded or dropped, and
 * `onChange` is told when the set of loaded tools changed (MCP sends
 * `notifications/tools/list_changed` then).
 *
 * @module
 */
import type { Registry, ToolsetSource } from "../registry/registry.ts";

/** Options of {@link watchPlugins}. */
export interface WatchOptions {
  registry: Registry;
  /** The directories to watch (real paths). */
  dirs: string[];
  /** The plugin sources as they are now (re-scans the directories). */
  scan: () => Promise<ToolsetSource[]>;
  /** Called after the set of loaded tools changed. */
  onChange: () => void | Promise<void>;
  /** Quiet time before a burst of file events is acted on (default 150 ms). */
  debounceMs?: number;
  /** Reports what was reloaded (default: nothing). */
  log?: (text: string) => void;
}

/** A running watcher. */
export interface PluginWatcher {
  /** Re-scan now (also what a file event triggers); resolves when applied. */
  refresh(): Promise<boolean>;
  close(): void;
}

async function _digest(file: string): Promise<string> {
  try {
    const bytes = await Deno.readFile(file);
    const d = await crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
  } catch {
    return "missing";
  }
}

function _fingerprint(registry: Registry): string {
  return JSON.stringify(
    registry.loaded().map((t) => [t.name, t.toolset, t.description, t.inputSchema]),
  );
}

/**
 * Start watching. Only file-drop sources (`kind: "plugin"`) are managed;
 * anything that changed since the registry loaded is applied at once.
 *
 * @example
 * ```ts ignore
 * const watcher = await watchPlugins({ registry, dirs, scan, onChange: () => handle.notifyToolsChanged() });
 * ```
 */
export async function watchPlugins(options: WatchOptions): Promise<PluginWatcher> {
  const { registry } = options;
  // What the registry holds now; digests are taken when the watch starts, so
  // the first refresh below also catches files changed since it loaded.
  const known = new Map<string, string>(); // source id → module digest
  for (const s of registry.sources()) {
    if (s.kind === "plugin") known.set(s.id, await _digest(s.modules[0]));
  }
  let running: Promise<boolean> = Promise.resolve(false);

  const apply = async (): Promise<boolean> => {
    const before = _fingerprint(registry);
    const sources = (await options.scan()).filter((s) => s.kind === "plugin");
    const seen = new Set<string>();
    for (const s of sources) {
      seen.add(s.id);
      const digest = await _digest(s.modules[0]);
      if (known.get(s.id) === digest) continue;
      if (known.has(s.id)) await registry.removeSource(s.id);
      options.log?.(`${known.has(s.id) ? "reloading" : "loading"} ${s.id}`);
      await registry.addSource(s);
      known.set(s.id, digest);
    }
    for (const id of [...known.keys()]) {
      if (seen.has(id)) continue;
      options.log?.(`removing ${id}`);
      await registry.removeSource(id);
      known.delete(id);
    }
    const changed = _fingerprint(registry) !== before;
    if (changed) await options.onChange();
    return changed;
  };
  const refresh = () => running = running.then(apply, apply);

  let closed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watcher = options.dirs.length ? Deno.watchFs(options.dirs, { recursive: true }) : undefined;
  // Files added or removed between the registry's scan and the watch start.
  await refresh();
  (async () => {
    if (!watcher) return;
    try {
      for await (const _event of watcher) {
        if (closed) break;
        clearTimeout(timer);
        timer = setTimeout(() => void refresh(), options.debounceMs ?? 150);
      }
    } catch { /* closed */ }
  })();
  return {
    refresh,
    close() {
      closed = true;
      clearTimeout(timer);
      try {
        watcher?.close();
      } catch { /* already closed */ }
    },
  };
}
