// Package deploy holds the offline checks of the AWS SAM deployment in
// ../template.yaml: its tests hold the template to the rest of the code (the
// Makefile build targets, the function packages and the environment they
// read, the table shape of pkg/dynamo) and to the project's IAM rules.
// validate.sh adds cfn-lint and the SAM transform (translate.py). Nothing here
// needs AWS credentials or a network.
package deploy
