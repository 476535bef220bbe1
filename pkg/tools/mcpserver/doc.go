// Package mcpserver serves a set of pkg/tools tools as an MCP server over
// Streamable HTTP, built with the official Go SDK: each tool with its own
// name, description and input schema, a call run only with the effect_ref and
// run scope the caller passes in _meta (io.warrant/...), its result as
// structuredContent and text, and its failures as fixed isError texts. The
// command cmd/toolserver serves the reference set on loopback.
package mcpserver
