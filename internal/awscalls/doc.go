// Package awscalls records the AWS calls a function's clients make, as IAM
// authorizes them: for each SDK operation, the IAM actions it needs, on which
// resource ARNs, with the condition keys the request sets (a KMS encryption
// context, a signing algorithm, an S3 list prefix). A Recorder's APIOptions
// go into a function's aws.Config (or a client's Options), so every client
// built from it records under that function's name. Tests use it to measure
// the functions' roles against what the functions actually call
// (deploy/iamcheck.py).
package awscalls
