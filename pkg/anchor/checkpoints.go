package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// CheckpointKey is the object key of a firm's checkpoint number:
// checkpoints/<firm>/<number, 12 digits>.json, so a listing is in order.
func CheckpointKey(firm string, number int64) string {
	return fmt.Sprintf("checkpoints/%s/%012d.json", firm, number)
}

// TimestampKey is the object key of the RFC 3161 timestamp token (DER) of
// a firm's checkpoint number: checkpoints/<firm>/timestamps/<number, 12
// digits>.tst, beside the checkpoint, written once as it is. It sorts after
// every checkpoint of the firm, so a listing of checkpoints (After) never
// meets one before the next checkpoint.
func TimestampKey(firm string, number int64) string {
	return fmt.Sprintf("checkpoints/%s/timestamps/%012d.tst", firm, number)
}

// checkpointPrefix is where a firm's checkpoints are kept.
func checkpointPrefix(firm string) string { return "checkpoints/" + firm + "/" }

// numberOf reads a checkpoint's number back from its key (false: not one).
func numberOf(firm, key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, checkpointPrefix(firm))
	digits, ok2 := strings.CutSuffix(rest, ".json")
	if !ok || !ok2 || len(digits) != 12 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n > 0
}

// S3Client is the part of the S3 client a checkpoint store uses.
type S3Client interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// S3Sink keeps each signed checkpoint as an object of a bucket with Object
// Lock, where nobody with table access can rewrite it, and reads them back
// for the sweeper, which signs a new checkpoint only over a log that extends
// the last one kept here. Each number is written once (a conditional put,
// If-None-Match: *), so a bucket never holds two checkpoints of one number;
// the bucket's default retention locks each object.
type S3Sink struct {
	Client S3Client
	Bucket string
}

// maxCheckpointBytes bounds what is read of a kept checkpoint (a signed
// checkpoint is about 600 bytes).
const maxCheckpointBytes = 64 << 10

// PutCheckpoint writes the signed checkpoint as JSON, once:
// evidence.ErrCheckpointExists when that number is already kept.
func (s *S3Sink) PutCheckpoint(ctx context.Context, firm string, number int64, signed evidence.Signed) error {
	body, err := json.Marshal(signed)
	if err != nil {
		return err
	}
	_, err = s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.Bucket),
		Key:         aws.String(CheckpointKey(firm, number)),
		Body:        bytes.NewReader(body),
		ContentType: aws.String("application/json"),
		// Written once: a second signer of the same number (a race, or a
		// fork) is refused by S3 itself.
		IfNoneMatch: aws.String("*"),
		// A bucket with Object Lock refuses a put without an integrity
		// checksum (Content-MD5 or a flexible checksum).
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	})
	return putOnce(err, number, evidence.ErrCheckpointExists)
}

// putOnce is the error of a write-once PutObject (If-None-Match: *) of
// checkpoint number's object: exists when an object was kept already.
func putOnce(err error, number int64, exists error) error {
	var ae smithy.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict"):
		return fmt.Errorf("checkpoint %d: %w", number, exists)
	}
	return classifyS3(err)
}

// PutTimestamp writes checkpoint number's timestamp token, once:
// evidence.ErrTimestampExists when one is already kept.
func (s *S3Sink) PutTimestamp(ctx context.Context, firm string, number int64, token []byte) error {
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.Bucket), Key: aws.String(TimestampKey(firm, number)), Body: bytes.NewReader(token),
		ContentType: aws.String("application/octet-stream"), IfNoneMatch: aws.String("*"),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	})
	return putOnce(err, number, evidence.ErrTimestampExists)
}

// Checkpoint reads checkpoint number back (evidence.ErrCheckpointNotKept
// when there is none).
func (s *S3Sink) Checkpoint(ctx context.Context, firm string, number int64) (evidence.Signed, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(CheckpointKey(firm, number))})
	if err != nil {
		var nk *s3types.NoSuchKey
		var ae smithy.APIError
		if errors.As(err, &nk) || (errors.As(err, &ae) && ae.ErrorCode() == "NotFound") {
			return evidence.Signed{}, fmt.Errorf("checkpoint %d: %w", number, evidence.ErrCheckpointNotKept)
		}
		return evidence.Signed{}, classifyS3(err)
	}
	defer out.Body.Close()
	return decodeKept(io.LimitReader(out.Body, maxCheckpointBytes+1), number)
}

// After answers the lowest checkpoint number kept above number, if any: one
// listing of at most one key.
func (s *S3Sink) After(ctx context.Context, firm string, number int64) (int64, bool, error) {
	out, err := s.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket),
		Prefix: aws.String(checkpointPrefix(firm)), StartAfter: aws.String(CheckpointKey(firm, number)), MaxKeys: aws.Int32(1)})
	if err != nil {
		return 0, false, classifyS3(err)
	}
	for _, o := range out.Contents {
		if n, ok := numberOf(firm, aws.ToString(o.Key)); ok && n > number {
			return n, true, nil
		}
	}
	return 0, false, nil
}

func decodeKept(r io.Reader, number int64) (evidence.Signed, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return evidence.Signed{}, classifyS3(err)
	}
	var signed evidence.Signed
	if len(raw) > maxCheckpointBytes || contracts.DecodeStrict(raw, &signed) != nil {
		return evidence.Signed{}, fmt.Errorf("anchor: checkpoint %d as kept is not a signed checkpoint", number)
	}
	return signed, nil
}

// DirSink keeps each checkpoint as a file under Dir
// (Dir/checkpoints/<firm>/<number>.json), created once and read-only: the
// local stack's stand-in for the checkpoint bucket, outside the table (the
// local stack's DynamoDB is in memory). It offers nothing Object Lock does
// against the machine's owner.
type DirSink struct {
	Dir string
}

func (d DirSink) path(firm string, number int64) string {
	return filepath.Join(d.Dir, filepath.FromSlash(CheckpointKey(firm, number)))
}

// PutCheckpoint creates the checkpoint's file, once
// (evidence.ErrCheckpointExists when it exists).
func (d DirSink) PutCheckpoint(_ context.Context, firm string, number int64, signed evidence.Signed) error {
	if contracts.CheckUUID("firm", firm) != nil {
		return fmt.Errorf("anchor: firm %q is not a UUID", firm)
	}
	body, err := json.Marshal(signed)
	if err != nil {
		return err
	}
	if err := createOnce(d.path(firm, number), body); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("checkpoint %d: %w", number, evidence.ErrCheckpointExists)
	} else if err != nil {
		return err
	}
	return nil
}

// createOnce creates the read-only file p (and its folder) holding data;
// fs.ErrExist when it exists.
func createOnce(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PutTimestamp creates the file of checkpoint number's timestamp token,
// once (evidence.ErrTimestampExists when it exists).
func (d DirSink) PutTimestamp(_ context.Context, firm string, number int64, token []byte) error {
	if contracts.CheckUUID("firm", firm) != nil {
		return fmt.Errorf("anchor: firm %q is not a UUID", firm)
	}
	if err := createOnce(filepath.Join(d.Dir, filepath.FromSlash(TimestampKey(firm, number))), token); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("checkpoint %d: %w", number, evidence.ErrTimestampExists)
	} else if err != nil {
		return err
	}
	return nil
}

// Checkpoint reads checkpoint number back.
func (d DirSink) Checkpoint(_ context.Context, firm string, number int64) (evidence.Signed, error) {
	f, err := os.Open(d.path(firm, number))
	if errors.Is(err, fs.ErrNotExist) {
		return evidence.Signed{}, fmt.Errorf("checkpoint %d: %w", number, evidence.ErrCheckpointNotKept)
	} else if err != nil {
		return evidence.Signed{}, err
	}
	defer f.Close()
	return decodeKept(io.LimitReader(f, maxCheckpointBytes+1), number)
}

// After answers the lowest checkpoint number kept above number.
func (d DirSink) After(_ context.Context, firm string, number int64) (int64, bool, error) {
	names, err := os.ReadDir(filepath.Join(d.Dir, filepath.FromSlash(checkpointPrefix(firm))))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	for _, e := range names { // ReadDir sorts by name: by number
		if n, ok := numberOf(firm, checkpointPrefix(firm)+e.Name()); ok && n > number {
			return n, true, nil
		}
	}
	return 0, false, nil
}
