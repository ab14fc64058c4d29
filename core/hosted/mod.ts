/**
 * Third-party MCP servers as toolsets: installs at exact versions, a start in
 * the namespace with limits and egress, checked stdio, listings and calls.
 *
 * @module
 */
export { changedFields, readApproved, readSeen } from "./approvals.ts";
export { type HostedCallContext, HostedServers, serverLetters } from "./hosted_servers.ts";
export { installed, installServer } from "./install.ts";
export { npmDenoMissing } from "./server_command.ts";
export { serversDir } from "./servers_dir.ts";
