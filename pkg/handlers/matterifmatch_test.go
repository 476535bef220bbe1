package handlers_test

import "testing"

// Issue 25, item 4: a matter's client domains are what the e-mail rules
// weigh, so a write must name the version it replaces: an update without
// If-Match is 428, one naming a version the matter has moved past is 412,
// and neither writes anything.
func TestMatterPutNeedsIfMatch(t *testing.T) {
	s := newStack(t, stackOptions{})
	const matter = "5d4c3b2a-1908-4f7e-8d6c-5b4a39281706"
	body := map[string]any{"name": "Ridgeway v. Harbor", "client_domains": []string{"ridgeway-logistics.example"}}
	if resp := s.post(putMatterReq(t, matter, body).set("headers.if-none-match", "*")); resp.StatusCode >= 300 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	body["client_domains"] = []string{"harbor-freight.example"}
	before := s.scan()
	s.wantProblem("an update without If-Match", s.post(putMatterReq(t, matter, body)), 428)
	s.wantProblem("an update naming a stale version", s.post(putMatterReq(t, matter, body).set("headers.if-match", `"0"`)), 412)
	s.wantUnchanged("refused updates", before)
}
