package secrets_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/seed-f6d3920e/warrant/pkg/secrets"
)

type fakeGetter struct {
	get func(id string) (*sm.GetSecretValueOutput, error)
}

func (f fakeGetter) GetSecretValue(_ context.Context, in *sm.GetSecretValueInput, _ ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
	return f.get(aws.ToString(in.SecretId))
}

func TestGetSecret(t *testing.T) {
	const value = "tok-7f3a9c"
	m := &secrets.Manager{Client: fakeGetter{get: func(id string) (*sm.GetSecretValueOutput, error) {
		switch id {
		case "mcp/docs":
			return &sm.GetSecretValueOutput{SecretString: aws.String(value)}, nil
		case "mcp/binary":
			return &sm.GetSecretValueOutput{SecretBinary: []byte(value)}, nil
		}
		return nil, errors.New("ResourceNotFoundException: no such secret")
	}}}
	ctx := context.Background()

	got, err := m.GetSecret(ctx, "mcp/docs")
	if err != nil || got != value {
		t.Fatalf("GetSecret = %q, %v; want the secret string", got, err)
	}
	if _, err := m.GetSecret(ctx, "mcp/binary"); !errors.Is(err, secrets.ErrNoString) {
		t.Fatalf("binary secret: err = %v, want ErrNoString", err)
	}
	_, err = m.GetSecret(ctx, "mcp/missing")
	if err == nil || !strings.Contains(err.Error(), `"mcp/missing"`) {
		t.Fatalf("missing secret: err = %v, want an error naming the id", err)
	}
}
