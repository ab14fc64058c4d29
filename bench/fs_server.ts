// The peer of the MCP benchmark: the official MCP filesystem server (pinned in deno.json),
// started under Deno. Arguments are its allowed directories.
import "@modelcontextprotocol/server-filesystem/dist/index.js";
