/**
 * Watch file-drop plugin directories and keep a registry in step: a plugin
 * file added, changed or removed is loaded, reloaded or dropped, and
 * `onChange` is told when the set of loaded tools changed (MCP sends
 * `notifications/tools/list_changed` then).
 *
 * @module
 */
import type { Registry, ToolsetSource } from "../registry/mod.ts";

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

/** The sources the watcher re-adds in order: file-drop plugins and the packages after them. */
function _managed(s: ToolsetSource): boolean {
  return s.kind === "plugin" || s.kind === "package";
}

function _fingerprint(registry: Registry): string {
  return JSON.stringify(
    registry.loaded().map((t) => [t.name, t.toolset, t.description, t.inputSchema]),
  );
}

/**
 * Start watching. File-drop sources (`kind: "plugin"`) are watched, and the
 * packages after them re-added with them so that collisions keep load order;
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
    const order = (await options.scan()).filter(_managed);
    const digests = new Map<string, string>();
    for (const s of order) if (s.kind === "plugin") digests.set(s.id, await _digest(s.modules[0]));
    const stale = (s: ToolsetSource) =>
      s.kind === "plugin" && known.get(s.id) !== digests.get(s.id);
    for (const id of [...known.keys()]) {
      if (digests.has(id)) continue;
      options.log?.(`removing ${id}`);
      await registry.removeSource(id);
      known.delete(id);
    }
    // Collisions are settled in load order: from the first source that changed or moved, every
    // later one is added again in the order of a fresh start (unchanged ones from the cache).
    const now = registry.sources().filter(_managed).map((s) => s.id);
    let from = order.findIndex((s, i) => stale(s) || now[i] !== s.id);
    if (from === -1) from = order.length;
    const again = order.slice(from);
    for (const s of again) {
      if (stale(s)) options.log?.(`${known.has(s.id) ? "reloading" : "loading"} ${s.id}`);
    }
    // Discovered first, then swapped in one step: no call sees a state in between.
    const changedIds = again.filter(stale).map((s) => s.id);
    await registry.replaceSources(now.slice(from), again, changedIds);
    for (const s of again) if (s.kind === "plugin") known.set(s.id, digests.get(s.id)!);
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
