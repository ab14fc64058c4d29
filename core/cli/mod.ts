/**
 * One module per command, the options, a command's settings and opening the
 * registry.
 *
 * @module
 */
export { hostBundle } from "./host_bundle.ts";
