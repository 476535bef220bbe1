// Package catalog reads the deployment's configuration of what its agents may
// do: the tool catalog (TOOL_CATALOG: each tool's name, description, input
// schema, the summary counsel reads, the field that carries the matter, its
// class, timeout and the system that serves it) and the agents (AGENTS: each
// agent's prompt, model, tools and limits). Both are data, validated whole at
// load; each has a version hash the ledger records with every run.
package catalog
