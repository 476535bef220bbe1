package wire

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
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
	if spec == "" {
		p, err := toolpolicy.Embedded()
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "the embedded risk policy does not load", err)
		}
		return p, nil
	}
	doc, err := readSource(ctx, "TOOL_POLICY", spec, newSSM)
	if err != nil {
		return nil, err
	}
	p, err := toolpolicy.LoadDocument(doc)
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TOOL_POLICY: the policy document does not load", err)
	}
	return p, nil
}

// LoadCatalog loads the tool catalog spec names (config.Config.ToolCatalog),
// from the sources LoadPolicy reads; empty is the embedded catalog.
func LoadCatalog(ctx context.Context, spec string, newSSM func() SSMGetter) (*catalog.Catalog, error) {
	if spec == "" {
		c, err := catalog.Embedded()
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "the embedded tool catalog does not load", err)
		}
		return c, nil
	}
	doc, err := readSource(ctx, "TOOL_CATALOG", spec, newSSM)
	if err != nil {
		return nil, err
	}
	c, err := catalog.Parse(doc)
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TOOL_CATALOG: the catalog does not load", err)
	}
	return c, nil
}

// LoadAgents loads the agents document spec names (config.Config.Agents),
// from the sources LoadPolicy reads; empty is the embedded one. A
// system_prompt_file is a file of the function's bundle.
func LoadAgents(ctx context.Context, spec string, newSSM func() SSMGetter) (*catalog.Agents, error) {
	if spec == "" {
		a, err := catalog.EmbeddedAgents()
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "the embedded agents do not load", err)
		}
		return a, nil
	}
	doc, err := readSource(ctx, "AGENTS", spec, newSSM)
	if err != nil {
		return nil, err
	}
	a, err := catalog.ParseAgents(doc, func(name string) ([]byte, error) {
		path, err := bundlePath(name)
		if err != nil {
			return nil, err
		}
		return os.ReadFile(path)
	})
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable AGENTS: the agents document does not load", err)
	}
	return a, nil
}

// readSource reads the document a "file:" or "ssm:" spec of variable names.
func readSource(ctx context.Context, variable, spec string, newSSM func() SSMGetter) ([]byte, error) {
	kind, where, _ := strings.Cut(spec, ":")
	switch kind {
	case "file":
		path, err := bundlePath(where)
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable "+variable+": the bundle's folder is unknown", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable "+variable+": the file cannot be read", err)
		}
		return b, nil
	case "ssm":
		out, err := newSSM().GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(where), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable "+variable+": the SSM parameter cannot be read", err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return nil, failure.New(failure.KindConfigInvalid, "environment variable "+variable+": the SSM parameter has no value")
		}
		return []byte(*out.Parameter.Value), nil
	}
	return nil, failure.New(failure.KindConfigInvalid, "environment variable "+variable+" names no document source")
}

// bundlePath is a file of the function's bundle: path itself when
// absolute, else relative to the executable's folder.
func bundlePath(path string) (string, error) {
	if filepath.IsAbs(path) {
		return path, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(exe), path), nil
}
