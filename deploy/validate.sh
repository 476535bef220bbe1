#!/usr/bin/env bash
# Offline validation of the AWS SAM deployment: no AWS account, no network.
#   1. cfn-lint template.yaml            (CloudFormation + SAM schema, best practices),
#                                         with the defaults and with PRIVATE_NETWORK;
#                                         and deploy/witness.yaml (the witness's stack)
#   2. deploy/translate.py               (the SAM transform, then checks on its output),
#                                         with the defaults, samconfig.toml's
#                                         environments and PRIVATE_NETWORK
#   3. go test ./deploy                  (the template against the code: routes, build
#                                         targets, table shape, IAM scope, environment)
# Runs every step and fails if any failed. cfn-lint and aws-sam-translator are Python
# packages (pip install cfn-lint aws-sam-translator); without them steps 1-2 are skipped
# with a message, except under CI=true, where their absence is a failure.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
PYTHON=${PYTHON:-python3}
failed=()

# A second parameter set that turns every optional grant and the worker's VPC
# on: the worker in a private network (WorkerSubnetIds, WorkerSecurityGroupIds)
# with Lambda tools, tool secrets under their own key, documents from SSM and
# from the bundle, and a receipt key of the firm's own (no ReceiptKey created)
# after a rotation (RetiredReceiptKeys, one kms: and one spki: key) with
# checkpoints locked in COMPLIANCE mode, counsel's notifications mailed
# to an address (NotificationEmail) with names (NotificationEmailNames), and
# the firm's own key for data, in another account (DataKeyArn: no DataKey
# created). The defaults turn them all off (and create the receipt key and
# the data key).
PRIVATE_NETWORK=(
	JwtIssuer=https://issuer.example.com/ JwtAudience=warrant-api
	WorkerSubnetIds=subnet-0a1b2c3d4e5f60718,subnet-0f1e2d3c4b5a69788
	WorkerSecurityGroupIds=sg-0123456789abcdef0
	ToolFunctionArns=arn:aws:lambda:us-east-1:123456789012:function:dms-file,arn:aws:lambda:us-east-1:123456789012:function:efiling-clerk:prod
	ToolSecretArns=arn:aws:secretsmanager:us-east-1:123456789012:secret:warrant/prod/dms-client-a1B2c3
	ToolSecretsKeyArn=arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab
	ToolCatalogParameter=/warrant/prod/tool-catalog/v1 AgentsParameter=/warrant/prod/agents/v1 ToolPolicyFile=tool_policy.json
	ReceiptKeyArn=arn:aws:kms:us-east-1:123456789012:key/5b2f8c1e-4a7d-4e3b-9c6f-0d1e2f3a4b5c
	RetiredReceiptKeys=kms:arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab,spki:MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEntgHM8aOooQ1WMgaV2VPY2RYYqkNbigMJJOkg4+ajDQHOrMqORGA0A6wiV2Li34fwSxHScmckcxwsfPs4XMp7A==
	CheckpointRetentionMode=COMPLIANCE CheckpointRetentionDays=2557
	DataKeyArn=arn:aws:kms:us-east-1:210987654321:key/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d
	NotificationEmail=counsel-desk@firm.example NotificationEmailNames=names
)

missing() {
	if [ "${CI:-}" = "true" ]; then
		echo "validate: FAIL: $1 is not installed (CI=true requires it)" >&2
		failed+=("$2")
	else
		echo "validate: SKIP $2: $1 is not installed (pip install cfn-lint aws-sam-translator)" >&2
	fi
}

echo "validate: cfn-lint template.yaml"
if command -v cfn-lint >/dev/null 2>&1; then
	cfn-lint template.yaml || failed+=("cfn-lint")
	echo "validate: cfn-lint template.yaml --parameters PRIVATE_NETWORK"
	cfn-lint template.yaml --parameters "${PRIVATE_NETWORK[@]}" || failed+=("cfn-lint (private network)")
	# The witness's own stack (cmd/witness), deployed by someone other than the firm.
	echo "validate: cfn-lint deploy/witness.yaml"
	cfn-lint deploy/witness.yaml || failed+=("cfn-lint (witness)")
else
	missing cfn-lint cfn-lint
fi

echo "validate: SAM transform (deploy/translate.py)"
if "$PYTHON" -c 'import samtranslator' >/dev/null 2>&1; then
	"$PYTHON" deploy/translate.py template.yaml --parameters "${PRIVATE_NETWORK[@]}" || failed+=("translate")
else
	missing aws-sam-translator translate
fi

if [ "${VALIDATE_GO_TEST:-}" = "skip" ]; then
	# make test sets it: its gotest step has just run ./deploy with the rest.
	echo "validate: go test ./deploy: run by make test's go test step (VALIDATE_GO_TEST=skip)"
else
	echo "validate: go test ./deploy"
	"$GO" test -count=1 ./deploy || failed+=("go test ./deploy")
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "validate: failed: ${failed[*]}" >&2
	exit 1
fi
echo "validate: template.yaml OK"
