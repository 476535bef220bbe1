package wire

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
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
// policy. The error names the document, the field and its line and column,
// never a value of the document (config.DocumentError).
func LoadPolicy(ctx context.Context, spec string, newSSM func() SSMGetter) (*toolpolicy.Policy, error) {
	if spec == "" {
		p, err := toolpolicy.Embedded()
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "the embedded risk policy does not load", err)
		}
		return p, nil
	}
	doc, err := ReadDocument(ctx, config.DocPolicy, spec, newSSM)
	if err != nil {
		return nil, err
	}
	return doc.Policy()
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
	doc, err := ReadDocument(ctx, config.DocCatalog, spec, newSSM)
	if err != nil {
		return nil, err
	}
	return doc.Catalog()
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
	doc, err := ReadDocument(ctx, config.DocAgents, spec, newSSM)
	if err != nil {
		return nil, err
	}
	return doc.Agents(ReadBundleFile)
}

// ReadBundleFile reads a file of the function's bundle (an agent's
// system_prompt_file): name itself when absolute, else relative to the
// executable's folder.
func ReadBundleFile(name string) ([]byte, error) {
	path, err := bundlePath(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// ReadDocument reads the document a "file:" or "ssm:" spec of variable
// names. A source that cannot be read is config_invalid naming the
// variable and the source.
func ReadDocument(ctx context.Context, variable, spec string, newSSM func() SSMGetter) (config.Document, error) {
	doc := config.Document{Variable: variable, Source: spec}
	kind, where, _ := strings.Cut(spec, ":")
	switch kind {
	case "file":
		path, err := bundlePath(where)
		if err != nil {
			return doc, failure.Wrap(failure.KindConfigInvalid, doc.Name()+": the bundle's folder is unknown", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			why := "the file cannot be read"
			switch {
			case errors.Is(err, fs.ErrNotExist):
				why = "no such file"
			case errors.Is(err, fs.ErrPermission):
				why = "the file cannot be read (permission denied)"
			}
			if path != where {
				why += " (read as " + path + ", relative to the function's bundle)"
			}
			return doc, failure.Wrap(failure.KindConfigInvalid, doc.Name()+": "+why, err)
		}
		doc.Data = b
		return doc, nil
	case "ssm":
		if newSSM == nil {
			return doc, failure.New(failure.KindConfigInvalid, doc.Name()+": no SSM client here to read the parameter")
		}
		out, err := newSSM().GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(where), WithDecryption: aws.Bool(true)})
		if err != nil {
			return doc, failure.Wrap(failure.KindConfigInvalid, doc.Name()+": the SSM parameter cannot be read", err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return doc, failure.New(failure.KindConfigInvalid, doc.Name()+": the SSM parameter has no value")
		}
		doc.Data = []byte(*out.Parameter.Value)
		return doc, nil
	}
	return doc, failure.New(failure.KindConfigInvalid, "environment variable "+variable+" names no document source")
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
