#!/usr/bin/env bash
# Offline validation of the AWS SAM deployment: no AWS account, no network.
#   1. cfn-lint template.yaml            (CloudFormation + SAM schema, best practices)
#   2. deploy/translate.py               (the SAM transform, then checks on its output)
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
else
	missing cfn-lint cfn-lint
fi

echo "validate: SAM transform (deploy/translate.py)"
if "$PYTHON" -c 'import samtranslator' >/dev/null 2>&1; then
	"$PYTHON" deploy/translate.py template.yaml || failed+=("translate")
else
	missing aws-sam-translator translate
fi

echo "validate: go test ./deploy"
"$GO" test -count=1 ./deploy || failed+=("go test ./deploy")

if [ ${#failed[@]} -gt 0 ]; then
	echo "validate: failed: ${failed[*]}" >&2
	exit 1
fi
echo "validate: template.yaml OK"
