package wire

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// SSMGetter is the part of the SSM client the policy loader uses.
type SSMGetter interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// LoadPolicy loads the risk policy spec names (config.Config.ToolPolicy):
// the embedded policy (empty), a file of the function's bundle ("file:",
// relative to the executable unless absolute) or an SSM parameter ("ssm:").
// A document that cannot be read or does not load is config_invalid: the
// function does not start, and never falls back to a more permissive
// policy. The error never echoes the document.
func LoadPolicy(ctx context.Context, spec string, newSSM func() SSMGetter) (*toolpolicy.Policy, error) {
	kind, where, _ := strings.Cut(spec, ":")
	var doc []byte
	switch {
	case spec == "":
		p, err := toolpolicy.Embedded()
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "the embedded risk policy does not load", err)
		}
		return p, nil
	case kind == "file":
		path := where
		if !filepath.IsAbs(path) {
			exe, err := os.Executable()
			if err != nil {
				return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TOOL_POLICY: the bundle's folder is unknown", err)
			}
			path = filepath.Join(filepath.Dir(exe), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TOOL_POLICY: the policy file cannot be read", err)
		}
		doc = b
	case kind == "ssm":
		out, err := newSSM().GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(where), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TOOL_POLICY: the SSM parameter cannot be read", err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return nil, failure.New(failure.KindConfigInvalid, "environment variable TOOL_POLICY: the SSM parameter has no value")
		}
		doc = []byte(*out.Parameter.Value)
	default:
		return nil, failure.New(failure.KindConfigInvalid, "environment variable TOOL_POLICY names no policy source")
	}
	p, err := toolpolicy.LoadDocument(doc)
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TOOL_POLICY: the policy document does not load", err)
	}
	return p, nil
}
