package wire_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// fakeSSM answers GetParameter for one name.
type fakeSSM struct {
	name, value string
	err         error
	asked       []string
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.asked = append(f.asked, aws.ToString(in.Name))
	if f.err != nil {
		return nil, f.err
	}
	if aws.ToString(in.Name) != f.name || !aws.ToBool(in.WithDecryption) {
		return nil, errors.New("ParameterNotFound")
	}
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Name: in.Name, Value: aws.String(f.value)}}, nil
}

const customPolicy = `{"version":"firm-2026-12","default":{"tier":"prohibited","reason":"unlisted"},` +
	`"tools":{"search_matter_documents":{"tier":"low","reason":"read"},"send_client_email":{"tier":"high","reason":"sends"}}}`

// TestLoadPolicy: TOOL_POLICY's three sources load the document they name;
// one that cannot be read or does not load stops the function's init with
// config_invalid, and never falls back to another policy.
func TestLoadPolicy(t *testing.T) {
	ctx := context.Background()
	p, err := wire.LoadPolicy(ctx, "", nil)
	if err != nil || p.Version() == "" {
		t.Fatalf("embedded: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(file, []byte(customPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := wire.LoadPolicy(ctx, "file:"+file, nil); err != nil || p.Version() != "firm-2026-12" {
		t.Fatalf("file: %v", err)
	}
	fake := &fakeSSM{name: "/warrant/prod/tool-policy", value: customPolicy}
	newSSM := func() wire.SSMGetter { return fake }
	if p, err := wire.LoadPolicy(ctx, "ssm:/warrant/prod/tool-policy", newSSM); err != nil || p.Version() != "firm-2026-12" {
		t.Fatalf("ssm: %v", err)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"version":"x","default":{"tier":"low","reason":"allow all"},"tools":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]string{
		"a missing file":                    "file:" + filepath.Join(dir, "nope.json"),
		"a document that allows by default": "file:" + broken,
		"a missing parameter":               "ssm:/warrant/other",
	} {
		_, err := wire.LoadPolicy(ctx, spec, newSSM)
		if k, _, _ := failure.Classify(err); k != failure.KindConfigInvalid || !strings.Contains(err.Error(), "TOOL_POLICY") {
			t.Errorf("%s: %v, want config_invalid naming TOOL_POLICY", name, err)
		}
	}
	fake.err = errors.New("AccessDeniedException")
	if _, err := wire.LoadPolicy(ctx, "ssm:/warrant/prod/tool-policy", newSSM); err == nil {
		t.Error("an SSM failure loaded a policy")
	}
}
