// Package mcp is the target for a remote MCP server over Streamable HTTP: it
// implements agent.Target with the official Go SDK, so a catalog tool served
// by a firm's MCP server is called like a built-in one. It refuses a tool
// whose input schema no longer matches the catalog's pin, says whether a
// failed call left Warrant (unreachable or outcome unknown) from what the HTTP
// layer saw, refuses every request the server makes of the client, and keeps
// tokens out of its errors and results.
package mcp
