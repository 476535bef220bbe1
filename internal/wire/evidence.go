package wire

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp"
)

// EvidenceKeys are the receipt keys a function holds: the signer
// (RECEIPT_KEY), every public key receipts verify under (the signer's and
// RECEIPT_RETIRED_KEYS'), and the checkpoint bucket's writer.
type EvidenceKeys struct {
	Signer evidence.Signer
	Keys   evidence.KeySet
	Sink   handlers.CheckpointSink
	// OriginPrefix is CHECKPOINT_ORIGIN_PREFIX: the checkpoint notes'
	// origin is it, a slash and the firm id ("": the default).
	OriginPrefix string
	// TSA is the time-stamping authority the sweeper asks for each latest
	// checkpoint's token (TIMESTAMP_AUTHORITY_URL and _CERTIFICATE; nil:
	// none configured).
	TSA handlers.Stamper
	// Witnesses cosign each latest checkpoint (WITNESSES; none: none
	// configured).
	Witnesses []handlers.Witness
}

// LoadEvidenceKeys reads cfg's receipt keys; newKMS and newS3 supply the
// clients a kms key and a bucket need (nil: refused). A function that reads
// no RECEIPT_KEY gets nil.
func LoadEvidenceKeys(ctx context.Context, cfg config.Config, newKMS func() anchor.SignClient, newS3 func() anchor.S3Client) (*EvidenceKeys, error) {
	if cfg.ReceiptKey == "" {
		return nil, nil
	}
	signer, pub, err := anchor.ParseReceiptKey(ctx, cfg.ReceiptKey, newKMS)
	if err != nil {
		// The error never echoes the spec (it may hold key material).
		return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable RECEIPT_KEY does not name a usable key", err)
	}
	retired, err := anchor.ParseRetiredKeys(ctx, cfg.RetiredReceiptKeys, newKMS)
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable RECEIPT_RETIRED_KEYS does not name usable keys", err)
	}
	k := &EvidenceKeys{Signer: signer, Keys: evidence.KeySet{}.Add(pub).Add(retired...), OriginPrefix: cfg.CheckpointOriginPrefix}
	if cfg.TimestampURL != "" {
		certs, err := timestamp.ParseCertificates([]byte(cfg.TimestampCert))
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, "environment variable TIMESTAMP_AUTHORITY_CERTIFICATE is not a PEM certificate", err)
		}
		k.TSA = &timestamp.Client{URL: cfg.TimestampURL, Certs: certs}
	}
	for i, w := range cfg.Witnesses {
		key, err := evidence.ParseWitnessKey(w.VKey)
		if err != nil {
			return nil, failure.Wrap(failure.KindConfigInvalid, fmt.Sprintf("environment variable WITNESSES: [%d].vkey is not a witness's cosignature verifier key", i), err)
		}
		k.Witnesses = append(k.Witnesses, handlers.Witness{URL: w.URL, Key: key})
	}
	switch {
	case cfg.CheckpointBucket != "":
		if newS3 == nil {
			return nil, failure.New(failure.KindConfigInvalid, "environment variable CHECKPOINT_BUCKET: no S3 client")
		}
		k.Sink = &anchor.S3Sink{Client: newS3(), Bucket: cfg.CheckpointBucket}
	case cfg.CheckpointDir != "":
		k.Sink = anchor.DirSink{Dir: cfg.CheckpointDir}
	}
	return k, nil
}

// evidence builds the evidence service of a function; sign says whether it
// signs (stream-reduce, the sweeper) or only reads (runs).
func (d Deps) evidence(sign bool) *handlers.Evidence {
	if d.Evidence == nil {
		return nil
	}
	e := &handlers.Evidence{Store: d.Store, Keys: d.Evidence.Keys, Current: d.Evidence.Signer.KeyID(), Logger: d.Logger, Now: d.Now,
		OriginPrefix: d.Evidence.OriginPrefix}
	if sign {
		e.Signer, e.Sink, e.TSA, e.Witnesses = d.Evidence.Signer, d.Evidence.Sink, d.Evidence.TSA, d.Evidence.Witnesses
		e.WitnessClient = &http.Client{Timeout: 10 * time.Second}
	}
	return e
}
