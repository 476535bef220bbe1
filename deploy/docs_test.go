package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

const deployDoc = "../docs/DEPLOY.md"

// section is the text of the "## <title>" section of a Markdown document, up
// to the next "## " heading.
func section(t *testing.T, path, title string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, title)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

var jsonBlock = regexp.MustCompile("(?s)\n```json\n(.*?)\n```")

// TestConnectingYourSystemsExample loads every JSON document of DEPLOY.md's
// "Connecting your systems" with the code the functions load them with: the
// worked example's catalog (its schema pins included), its whole policy and
// its agents, each once. Then, as the functions and `warrant tools check`
// would: every catalog tool has a policy entry, every agent's tool is in the
// catalog and its model has a price, the secrets the catalog names fit
// ToolSecretArns, the summary the text quotes is the one counsel reads, and
// declaring a record asks for counsel as the text says.
func TestConnectingYourSystemsExample(t *testing.T) {
	text := section(t, deployDoc, "Connecting your systems")
	var cat *catalog.Catalog
	var pol *toolpolicy.Policy
	var agents *catalog.Agents
	for _, m := range jsonBlock.FindAllStringSubmatch(text, -1) {
		doc := []byte(m[1])
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(doc, &probe); err != nil {
			t.Fatalf("a json block of the section is not a JSON object: %v\n%s", err, doc)
		}
		var err error
		switch {
		case probe["agents"] != nil && agents == nil:
			agents, err = catalog.ParseAgents(doc, nil)
		case probe["default"] != nil && pol == nil:
			pol, err = toolpolicy.LoadDocument(doc)
		case probe["servers"] != nil && cat == nil:
			cat, err = catalog.Parse(doc)
		default:
			t.Fatalf("a json block of the section is none of the example's catalog, policy and agents, or one of them twice:\n%s", doc)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
	}
	if cat == nil || pol == nil || agents == nil {
		t.Fatalf("the example lacks a document: catalog %v, policy %v, agents %v", cat != nil, pol != nil, agents != nil)
	}

	for _, name := range cat.Names() {
		if _, listed := pol.Floor(name); !listed {
			t.Errorf("catalog tool %s has no entry in the example's policy (it would be denied)", name)
		}
	}
	prices, err := pricing.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	stackModel := str(get(rawTemplate(t), "Parameters", "ModelId", "Default"))
	for key, a := range agents.Agents {
		for _, tool := range a.Tools {
			if _, ok := cat.Tools[tool]; !ok {
				t.Errorf("agent %s uses %s, which the example's catalog lacks", key, tool)
			}
		}
		if _, err := prices.Price(a.ModelID); a.ModelID != "" && err != nil {
			t.Errorf("agent %s: model %s has no price: %v", key, a.ModelID, err)
		}
		if a.ModelID != "" && a.ModelID != stackModel {
			t.Errorf("agent %s: model %s is not the stack's ModelId (%s), the one the worker may call", key, a.ModelID, stackModel)
		}
	}
	secretPattern := regexp.MustCompile(str(get(rawTemplate(t), "Parameters", "ToolSecretArns", "AllowedPattern")))
	for name, s := range cat.Servers {
		for _, secret := range []string{s.Auth.Secret, s.Auth.ClientSecret} {
			if strings.HasPrefix(secret, "arn:") && !secretPattern.MatchString(secret) {
				t.Errorf("server %s names secret %s, which ToolSecretArns would not take", name, secret)
			}
		}
	}

	input := `{"matter_id":"6f1c2a4e-8b3d-4c5e-9f7a-1b2c3d4e5f60","title":"Engagement letter","doc_class":"correspondence",` +
		`"body":"...","folder":"Engagement","declare_as_record":true}`
	summary := cat.Tools["file_to_matter"].Summarize(json.RawMessage(input))
	if flat := strings.Join(strings.Fields(text), " "); !strings.Contains(flat, "reaches counsel as: "+summary) {
		t.Errorf("the section does not quote the summary counsel reads: %s", summary)
	}
	d, err := pol.Decide(toolpolicy.Call{Tool: "file_to_matter", Input: json.RawMessage(input),
		Meta: toolpolicy.Metadata{MatterID: "6f1c2a4e-8b3d-4c5e-9f7a-1b2c3d4e5f60"}})
	if err != nil || d.Action != toolpolicy.ActionRequireApproval ||
		!slices.ContainsFunc(d.FiredRules, func(r toolpolicy.FiredRule) bool { return r.ID == "dms.declare_record" }) {
		t.Errorf("declaring a record: %+v, %v; want require_approval by dms.declare_record, as the section says", d, err)
	}
}
