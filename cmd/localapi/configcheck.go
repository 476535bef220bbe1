package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// ConfigError is a configuration the functions would refuse at start: the
// stack is not started, and each fault is printed, a line each.
type ConfigError struct{ Faults []string }

func (e *ConfigError) Error() string {
	return "the functions' configuration does not load; nothing was started:\n  " + strings.Join(e.Faults, "\n  ")
}

// checkConfiguration loads the documents the functions will be given
// (TOOL_CATALOG, AGENTS, TOOL_POLICY, each "file:" made absolute as
// startTools gives it to them) with the functions' own loaders, and holds
// the agents to the catalog and the price table and MODEL_ID to the price
// table, as the functions do when they start: before anything is built or
// started, so a mistake stops the stack with its place (document, field,
// line and column) instead of a stack that says it is ready and answers
// 500. A document in SSM is the functions' to read. It returns the keys of
// the agents the functions will run (none when they read them from SSM).
func checkConfiguration(cfg StackConfig) ([]string, error) {
	var faults []string
	fault := func(err error) {
		var de *config.DocumentError
		if errors.As(err, &de) {
			faults = append(faults, de.Local())
			return
		}
		faults = append(faults, err.Error())
	}
	// read is the document spec names, the embedded one for "", and false
	// for one the functions read from SSM, or one that cannot be read.
	read := func(variable, spec string, embedded []byte) (config.Document, bool) {
		doc := config.Document{Variable: variable, Source: spec, Data: embedded}
		if spec == "" {
			return doc, true
		}
		where, ok := strings.CutPrefix(spec, "file:")
		if !ok {
			return doc, false
		}
		abs, err := filepath.Abs(where)
		if err != nil {
			fault(fmt.Errorf("%s: %w", variable, err))
			return doc, false
		}
		doc.Source = "file:" + abs
		if doc.Data, err = os.ReadFile(abs); err != nil {
			fault(fmt.Errorf("%s: %w", doc.Name(), err))
			return doc, false
		}
		return doc, true
	}

	var cat *catalog.Catalog
	var agents *catalog.Agents
	// Without TOOL_CATALOG, the local catalog: the embedded catalog's tools
	// on the reference server.
	catDoc, ok := read(config.DocCatalog, cfg.ToolCatalog, catalog.EmbeddedDocument())
	if ok {
		if c, err := catDoc.Catalog(); err != nil {
			fault(err)
		} else {
			cat = c
		}
	}
	agentsDoc, ok := read(config.DocAgents, cfg.Agents, catalog.EmbeddedAgentsDocument())
	if ok {
		a, err := agentsDoc.Agents(func(name string) ([]byte, error) {
			if !filepath.IsAbs(name) {
				// A function reads a relative one from its bundle, the
				// folder of its bootstrap: the local stack's bootstraps
				// have none.
				return nil, errors.New("the local stack's functions read a relative system_prompt_file from their bootstrap's folder, which holds only the bootstrap: name the file by its absolute path")
			}
			return os.ReadFile(name)
		})
		if err != nil {
			fault(err)
		} else {
			agents = a
		}
	}
	if polDoc, ok := read(config.DocPolicy, cfg.ToolPolicy, nil); ok && cfg.ToolPolicy != "" {
		if _, err := polDoc.Policy(); err != nil {
			fault(err)
		}
	}
	prices, err := pricing.Embedded()
	if err != nil {
		return nil, err
	}
	if _, err := prices.Price(cfg.ModelID); err != nil {
		faults = append(faults, "MODEL_ID: the model "+cfg.ModelID+" has no price in the price table, so runs could not be capped")
	} else if agents != nil && cat != nil {
		for _, f := range config.CheckAgents(agentsDoc, agents, catDoc, cat, prices, cfg.ModelID) {
			faults = append(faults, f.Local())
		}
	}
	if len(faults) > 0 {
		return nil, &ConfigError{Faults: faults}
	}
	if agents == nil {
		return nil, nil // the functions read them from SSM
	}
	return agents.Keys(), nil
}
