package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// configFaults is a configuration that does not pass config check: the
// report names each fault, a line each.
type configFaults int

func (n configFaults) Error() string { return fmt.Sprintf("the configuration has %d fault(s)", int(n)) }

// configCheckCmd checks the three configuration documents together, each
// loaded by the functions' own loaders (config.Document), the ones not
// given being the embedded ones a stack without them runs: every agent's
// tools are in the catalog, every catalog tool has an entry in the
// policy's tools, every agent's model_id has a price (PRICING_FILE, else
// the embedded table). One line per fault (document, field, line and
// column); exit 1 on any.
func configCheckCmd(args []string, stdout io.Writer) error {
	fs := newFlags("config check")
	files := map[string]*string{
		config.DocCatalog: fs.String("catalog", "", "the tool catalog `FILE` (TOOL_CATALOG)"),
		config.DocAgents:  fs.String("agents", "", "the agents `FILE` (AGENTS)"),
		config.DocPolicy:  fs.String("policy", "", "the risk policy `FILE` (TOOL_POLICY), whole or an overlay"),
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	given := 0
	for _, f := range files {
		if *f != "" {
			given++
		}
	}
	if len(pos) > 0 || given == 0 {
		return usageErr("config check takes at least one of --catalog FILE, --agents FILE, --policy FILE")
	}
	docs := map[string]config.Document{}
	var faults []*config.DocumentError
	loadFault := func(err error) {
		var de *config.DocumentError
		if errors.As(err, &de) {
			faults = append(faults, de)
			return
		}
		fmt.Fprintf(stdout, "%v\n", err)
		faults = append(faults, nil) // counted, printed
	}
	for _, v := range []string{config.DocCatalog, config.DocAgents, config.DocPolicy} {
		doc := config.Document{Variable: v}
		if path := *files[v]; path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			doc.Source, doc.Data = "file:"+path, b
		} else {
			switch v {
			case config.DocCatalog:
				doc.Data = catalog.EmbeddedDocument()
			case config.DocAgents:
				doc.Data = catalog.EmbeddedAgentsDocument()
			case config.DocPolicy:
				doc.Data = toolpolicy.EmbeddedDocument()
			}
		}
		docs[v] = doc
	}
	cat, err := docs[config.DocCatalog].Catalog()
	if err != nil {
		loadFault(err)
	}
	// A prompt file is a file of the bundle; the agents document is at the
	// bundle's top, so a prompt file is read from the document's folder.
	agentsDir := filepath.Dir(*files[config.DocAgents])
	agents, err := docs[config.DocAgents].Agents(func(name string) ([]byte, error) {
		if *files[config.DocAgents] == "" {
			return nil, errors.New("the embedded agents read no file")
		}
		if !filepath.IsAbs(name) {
			name = filepath.Join(agentsDir, name)
		}
		return os.ReadFile(name)
	})
	if err != nil {
		loadFault(err)
	}
	policy, err := docs[config.DocPolicy].Policy()
	if err != nil {
		loadFault(err)
	}
	prices, err := pricing.FromEnv()
	if err != nil {
		return fmt.Errorf("the price table (PRICING_FILE): %w", err)
	}
	if agents != nil && cat != nil {
		faults = append(faults, config.CheckAgents(docs[config.DocAgents], agents, docs[config.DocCatalog], cat, prices, "")...)
	}
	if cat != nil && policy != nil {
		faults = append(faults, config.CheckPolicy(docs[config.DocCatalog], cat, docs[config.DocPolicy], policy)...)
	}
	for _, f := range faults {
		if f != nil {
			fmt.Fprintln(stdout, f.Local())
		}
	}
	if len(faults) > 0 {
		return configFaults(len(faults))
	}
	var parts []string
	for _, v := range []string{config.DocCatalog, config.DocAgents, config.DocPolicy} {
		if *files[v] != "" {
			parts = append(parts, docs[v].Name())
		}
	}
	fmt.Fprintf(stdout, "config check: ok: %s (%d tool(s), %d agent(s), policy %s): every agent's tools are in the catalog, every tool has a policy entry, every agent's model_id has a price\n",
		strings.Join(parts, ", "), len(cat.Tools), len(agents.Agents), policy.Version())
	return nil
}
