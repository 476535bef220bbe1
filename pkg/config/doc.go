// Package config reads and validates a Lambda's environment once, at init, so a
// misconfigured function fails with a failure envelope before its first request.
// FunctionVars lists every variable each function reads; the template test holds
// template.yaml to that list. Endpoints for local runs use the SDK's own
// AWS_ENDPOINT_URL_<SERVICE> variables and are not read here.
package config
