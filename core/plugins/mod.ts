/**
 * The plugins the settings name, checked and turned into toolset sources;
 * installing packages, `corral check`, `corral new`, `--watch`.
 *
 * @module
 */
export { checkPlugins, formatCheckReport } from "./check.ts";
export { installPlugin } from "./packages.ts";
export { initPluginDir } from "./plugin_init.ts";
export { watchPlugins } from "./plugin_watcher.ts";
export { confinePlugins, pluginSources } from "./plugins.ts";
export { scaffoldTool } from "./scaffold.ts";
export { type PluginSources } from "./plugins.ts";
