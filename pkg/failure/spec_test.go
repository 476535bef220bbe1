package failure

import "testing"

// Looping over the closed lists means a kind or stage added without its
// texts fails here rather than silently falling back to the internal row.
func TestEveryKindIsDescribed(t *testing.T) {
	if len(specs) != len(allKinds) {
		t.Errorf("specs has %d rows for %d kinds", len(specs), len(allKinds))
	}
	for _, k := range AllKinds() {
		s, ok := specs[k]
		switch {
		case !ok:
			t.Errorf("%s: no spec row", k)
			continue
		case s.status < 400 || s.status > 599:
			t.Errorf("%s: status %d", k, s.status)
		case s.title == "" || s.summary == "" || s.recommend == "" || s.userMsg == "":
			t.Errorf("%s: missing text: %+v", k, s)
		case s.retryable != (s.retryAfter > 0):
			t.Errorf("%s: retryable=%v but retryAfter=%v", k, s.retryable, s.retryAfter)
		}
	}
	for k, byStage := range recommendOverrides {
		for st, text := range byStage {
			if !k.Valid() || !st.Valid() || text == "" {
				t.Errorf("bad override %s/%s", k, st)
			}
		}
	}
}

func TestEveryStageIsDescribed(t *testing.T) {
	if len(stageText) != len(allStages) {
		t.Errorf("stageText has %d rows for %d stages", len(stageText), len(allStages))
	}
	for _, s := range AllStages() {
		if stageText[s] == "" {
			t.Errorf("%s: no text", s)
		}
	}
}
