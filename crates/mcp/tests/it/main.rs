//! Integration tests of the MCP server with a real MCP client.
