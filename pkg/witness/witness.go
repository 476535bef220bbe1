// Package witness is a transparency-log witness for Warrant's firm logs
// (c2sp.org/tlog-witness): it keeps, per log, the last checkpoint it
// cosigned, refuses a checkpoint that does not extend it, and cosigns one
// that does with an Ed25519 cosignature/v1 (c2sp.org/tlog-cosignature).
//
// A firm log is a hash chain, not a Merkle tree (docs/DECISIONS.md, "Issue
// 30 item 1"), so the consistency proof from size M to size N is the log's
// entry lines M+1 to N themselves, each base64 on a proof line: the witness
// recomputes the chain from the head it holds and requires it to reach the
// new note's root (docs/DECISIONS.md, "Issue 30 item 4"). The protocol is
// otherwise tlog-witness's: POST <prefix>/add-checkpoint, the same request
// shape and the same statuses.
package witness

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// Limits of a request.
const (
	// MaxBodyBytes bounds an add-checkpoint request: under the 6 MB a
	// Lambda function URL or API Gateway takes, so a few ten thousand
	// entries since the last checkpoint the witness cosigned.
	MaxBodyBytes = 5 << 20
	// MaxEntryBytes bounds one entry line of a proof.
	MaxEntryBytes = 4 << 10
)

// LogConfig is a log the witness witnesses: its origin and the verifier key
// of the log's checkpoint notes (a type-0x02 ECDSA vkey, as `warrant
// evidence verify` prints it: checkpoint_note.vkey). Origin may be left
// out: it is then the vkey's key name, which Warrant's notes use.
type LogConfig struct {
	Origin string `json:"origin,omitempty"`
	VKey   string `json:"vkey"`
}

// Config is what a witness witnesses.
type Config struct {
	Logs []LogConfig `json:"logs"`
}

// ParseConfig reads a Config from JSON, strictly.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("witness: the configuration: %v", err)
	}
	if len(c.Logs) == 0 {
		return c, errors.New("witness: the configuration names no log")
	}
	return c, nil
}

// logKey is a configured log's key.
type logKey struct {
	origin string
	vkey   string
	pub    *ecdsa.PublicKey
	ver    note.Verifier
}

// parseLogKey reads a log's type-0x02 ECDSA vkey (transparency-dev/formats'
// NewECDSAVerifier checks its form and key hash) and its public key.
func parseLogKey(lc LogConfig) (logKey, error) {
	v, err := fnote.NewECDSAVerifier(lc.VKey)
	if err != nil {
		return logKey{}, fmt.Errorf("witness: log vkey %q: %v", lc.VKey, err)
	}
	_, rest, _ := strings.Cut(lc.VKey, "+")
	_, b64, _ := strings.Cut(rest, "+")
	raw, _ := base64.StdEncoding.DecodeString(b64) // NewECDSAVerifier decoded it
	pk, err := x509.ParsePKIXPublicKey(raw[1:])
	if err != nil {
		return logKey{}, err
	}
	pub, ok := pk.(*ecdsa.PublicKey)
	if !ok {
		return logKey{}, fmt.Errorf("witness: log vkey %q is not an ECDSA key", lc.VKey)
	}
	origin := lc.Origin
	if origin == "" {
		origin = v.Name()
	}
	if err := evidence.CheckOrigin(origin); err != nil {
		return logKey{}, fmt.Errorf("witness: %v", err)
	}
	return logKey{origin: origin, vkey: lc.VKey, pub: pub, ver: v}, nil
}

// GenerateKey makes a witness's Ed25519 key named name: the private key
// (a signed-note skey, PRIVATE+KEY+<name>+<id>+<base64>) to keep secret,
// and the cosignature/v1 verifier key (type 0x04) to hand to verifiers
// (`warrant evidence verify --witness`).
func GenerateKey(name string) (skey, vkey string, err error) {
	if err := evidence.CheckOrigin(name); err != nil {
		return "", "", fmt.Errorf("witness: the name: %v", err)
	}
	skey, v1, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return "", "", err
	}
	vkey, err = fnote.VKeyToCosignatureV1(v1)
	return skey, vkey, err
}

// VerifierKeyOf is the cosignature/v1 verifier key of skey.
func VerifierKeyOf(skey string) (string, error) {
	skey = strings.TrimSpace(skey)
	s, err := note.NewSigner(skey)
	if err != nil {
		return "", fmt.Errorf("witness: the key: %v", err)
	}
	return vkeyFromSkey(skey, s.Name())
}

func vkeyFromSkey(skey, name string) (string, error) {
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 {
		return "", errors.New("witness: the key is not PRIVATE+KEY+<name>+<id>+<base64>")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 33 || raw[0] != 0x01 {
		return "", errors.New("witness: the key is not an Ed25519 signed-note key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	v1, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return "", err
	}
	return fnote.VKeyToCosignatureV1(v1)
}

// Witness is a witness: its logs, its key and its state.
type Witness struct {
	logs   map[string]logKey
	byHash map[string]string // hex SHA-256 of an origin: the origin
	signer note.Signer
	vkey   string
	store  Store
}

// New is a witness of cfg's logs that signs with skey (GenerateKey's) and
// keeps its state in store.
func New(cfg Config, skey string, store Store) (*Witness, error) {
	skey = strings.TrimSpace(skey)
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, fmt.Errorf("witness: the key: %v", err)
	}
	vkey, err := vkeyFromSkey(skey, signer.Name())
	if err != nil {
		return nil, err
	}
	w := &Witness{logs: map[string]logKey{}, byHash: map[string]string{}, signer: signer, vkey: vkey, store: store}
	for _, lc := range cfg.Logs {
		k, err := parseLogKey(lc)
		if err != nil {
			return nil, err
		}
		if _, dup := w.logs[k.origin]; dup {
			return nil, fmt.Errorf("witness: log %s is configured twice", k.origin)
		}
		w.logs[k.origin] = k
		sum := sha256.Sum256([]byte(k.origin))
		w.byHash[hex.EncodeToString(sum[:])] = k.origin
	}
	if store == nil {
		return nil, errors.New("witness: no state store")
	}
	return w, nil
}

// Name is the witness's key name; VerifierKey its cosignature/v1 vkey.
func (w *Witness) Name() string        { return w.signer.Name() }
func (w *Witness) VerifierKey() string { return w.vkey }

// Refused is a witness's refusal of a checkpoint: the HTTP status
// (c2sp.org/tlog-witness) and why. Size is, on a 409, the size of the last
// checkpoint the witness cosigned for the log: the old size to send again,
// with a proof from it.
type Refused struct {
	Status int
	Size   int64
	Reason string
}

func (r *Refused) Error() string {
	if r.Status == http.StatusConflict {
		return fmt.Sprintf("witness: refused (%d): the witness's last cosigned checkpoint has size %d", r.Status, r.Size)
	}
	return fmt.Sprintf("witness: refused (%d): %s", r.Status, r.Reason)
}

func refuse(status int, format string, args ...any) *Refused {
	return &Refused{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// checkpoint is a note's checkpoint as the witness reads it.
type checkpoint struct {
	origin string
	size   int64
	head   string // hex
}

// AddCheckpoint is add-checkpoint: it checks signedNote against the log it
// names, old against the size the witness holds for that log, and proof
// (the entry lines from old+1 to the note's size) against the head it holds,
// then records the note and answers its cosignature line(s). A refusal is a
// *Refused; any other error is the store's.
func (w *Witness) AddCheckpoint(ctx context.Context, old int64, proof []string, signedNote []byte) ([]string, error) {
	cp, k, rf := w.openNote(signedNote)
	if rf != nil {
		return nil, rf
	}
	if old < 0 || old > cp.size {
		return nil, refuse(http.StatusBadRequest, "the old size %d is over the checkpoint's size %d", old, cp.size)
	}
	st, err := w.store.Load(ctx, k.origin)
	if err != nil {
		return nil, err
	}
	if old != st.Size {
		return nil, &Refused{Status: http.StatusConflict, Size: st.Size, Reason: "old size mismatch"}
	}
	if cp.size == 0 && cp.head != evidence.Genesis {
		return nil, refuse(http.StatusUnprocessableEntity, "a checkpoint of size 0 has the chain's genesis as its root")
	}
	switch {
	case old == 0 && len(proof) > 0:
		return nil, refuse(http.StatusUnprocessableEntity, "a proof from size 0 is empty")
	case old == 0:
		// Nothing cosigned yet: the empty log is consistent with any.
	case old == cp.size:
		if len(proof) > 0 {
			return nil, refuse(http.StatusUnprocessableEntity, "a proof between checkpoints of the same size is empty")
		}
		if cp.head != st.Head {
			return nil, refuse(http.StatusUnprocessableEntity, "a fork: the checkpoint has the size %d of the last one cosigned, and another root", cp.size)
		}
	default:
		if err := checkProof(st, cp, proof); err != nil {
			return nil, err
		}
	}
	cosig, err := w.cosign(signedNote)
	if err != nil {
		return nil, err
	}
	kept := append(append([]byte{}, signedNote...), cosig...)
	if err := w.store.Swap(ctx, k.origin, old, State{Size: cp.size, Head: cp.head, Note: string(kept)}); err != nil {
		var c *SizeChanged
		if errors.As(err, &c) && c.Size >= 0 {
			return nil, &Refused{Status: http.StatusConflict, Size: c.Size, Reason: "old size mismatch"}
		}
		return nil, err
	}
	return []string{strings.TrimSuffix(cosig, "\n")}, nil
}

// checkProof walks the chain from the head st holds through proof, the
// entry lines st.Size+1 to cp.size, and requires it to reach cp's root.
func checkProof(st State, cp checkpoint, proof []string) error {
	if int64(len(proof)) != cp.size-st.Size {
		return refuse(http.StatusUnprocessableEntity, "the proof has %d entries, from size %d to %d takes %d", len(proof), st.Size, cp.size, cp.size-st.Size)
	}
	h := st.Head
	for i, line := range proof {
		idx := st.Size + int64(i) + 1
		e, err := evidence.ParseEntry(line)
		if err != nil {
			return refuse(http.StatusUnprocessableEntity, "proof entry %d is not a firm log entry: %v", idx, err)
		}
		if e.Index != idx {
			return refuse(http.StatusUnprocessableEntity, "proof entry %d says it is entry %d", idx, e.Index)
		}
		h = evidence.Link(h, line)
	}
	if h != cp.head {
		return refuse(http.StatusUnprocessableEntity, "the proof does not chain from the last cosigned checkpoint (size %d) to this one's root: the log was forked, rewritten or lost an entry", st.Size)
	}
	return nil
}

// openNote reads a submitted note: its origin must be a configured log's
// (404), it must carry a valid signature by that log's key (403), and its
// text must be a Warrant checkpoint (400).
func (w *Witness) openNote(signedNote []byte) (checkpoint, logKey, *Refused) {
	var cp checkpoint
	if len(signedNote) > evidence.MaxNoteBytes {
		return cp, logKey{}, refuse(http.StatusBadRequest, "the checkpoint is over %d bytes", evidence.MaxNoteBytes)
	}
	origin, _, _ := strings.Cut(string(signedNote), "\n")
	k, ok := w.logs[origin]
	if !ok {
		return cp, k, refuse(http.StatusNotFound, "unknown log origin")
	}
	if _, err := note.Open(signedNote, note.VerifierList(k.ver)); err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return cp, k, refuse(http.StatusForbidden, "the checkpoint has no signature by the log's key")
		case errors.As(err, &invalid):
			return cp, k, refuse(http.StatusForbidden, "the checkpoint's signature by the log's key does not verify")
		default:
			return cp, k, refuse(http.StatusBadRequest, "the checkpoint is not a signed note: %v", err)
		}
	}
	c, err := evidence.VerifyCheckpointNote(signedNote, k.origin, k.pub)
	if err != nil {
		return cp, k, refuse(http.StatusBadRequest, "the checkpoint: %v", err)
	}
	return checkpoint{origin: k.origin, size: c.Size, head: c.Head}, k, nil
}

// cosign makes the witness's cosignature line over signedNote's text,
// ending in a newline.
func (w *Witness) cosign(signedNote []byte) (string, error) {
	n, err := note.Open(signedNote, note.VerifierList()) // text only: every signature is unknown
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		n, err = unverified.Note, nil
	}
	if err != nil {
		return "", err
	}
	out, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		return "", err
	}
	_, sigs, _ := strings.Cut(string(out), "\n\n")
	if !strings.HasPrefix(sigs, "— "+w.signer.Name()+" ") || strings.Count(sigs, "\n") != 1 {
		return "", errors.New("witness: the signer made no single signature line")
	}
	return sigs, nil
}

// Checkpoint is the last checkpoint the witness cosigned for the log whose
// origin's hex SHA-256 is originHash, with its cosignature (the
// monitoring endpoint's answer); false when there is none.
func (w *Witness) Checkpoint(ctx context.Context, originHash string) (string, bool, error) {
	origin, ok := w.byHash[originHash]
	if !ok {
		return "", false, nil
	}
	st, err := w.store.Load(ctx, origin)
	if err != nil || st.Note == "" {
		return "", false, err
	}
	return st.Note, true, nil
}

// formatSize is a 409's body.
func formatSize(n int64) string { return strconv.FormatInt(n, 10) + "\n" }
