// Package secrets reads the secrets a target authenticates with (an MCP
// server's bearer token, an OAuth client secret) from AWS Secrets Manager.
// It returns a secret's value to its caller and nowhere else: its errors
// name the secret by its id, never by its value, and it logs nothing.
package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Getter is the part of the Secrets Manager client a Manager uses.
type Getter interface {
	GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, optFns ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)
}

// Manager reads secrets from AWS Secrets Manager. The caller needs
// secretsmanager:GetSecretValue on each secret it reads (and kms:Decrypt on
// the secret's key when that key is a customer-managed one).
type Manager struct {
	Client Getter
}

// ErrNoString: the secret has no string value (it is binary, or empty).
var ErrNoString = errors.New("the secret holds no string value")

// GetSecret returns the current string value (AWSCURRENT) of the secret
// named by id, its name or ARN. The whole string is the secret: a JSON
// secret is returned as its JSON text.
func (m *Manager) GetSecret(ctx context.Context, id string) (string, error) {
	out, err := m.Client.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", fmt.Errorf("secrets: read %q: %w", id, err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", fmt.Errorf("secrets: read %q: %w", id, ErrNoString)
	}
	return *out.SecretString, nil
}
