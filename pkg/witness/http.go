package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// Handler serves the witness's HTTP interface (c2sp.org/tlog-witness) at
// prefix ("" for the root):
//
//	POST <prefix>/add-checkpoint        a checkpoint to cosign
//	GET  <prefix>/<origin hash>/checkpoint  the last one cosigned for a log
//
// logger (nil: none) gets one line per request: the route, the status, and
// for add-checkpoint the log's origin (a configured one only), the old and
// new sizes. Never a proof's entries nor a refusal's reason.
func (w *Witness) Handler(prefix string, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	prefix = strings.TrimSuffix(prefix, "/")
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.Path, prefix+"/")
		switch {
		case ok && path == "add-checkpoint":
			if r.Method != http.MethodPost {
				rw.Header().Set("Allow", http.MethodPost)
				plain(rw, http.StatusMethodNotAllowed, "add-checkpoint takes a POST")
				return
			}
			w.serveAdd(rw, r, logger)
		case ok && strings.HasSuffix(path, "/checkpoint") && r.Method == http.MethodGet:
			n, found, err := w.Checkpoint(r.Context(), strings.TrimSuffix(path, "/checkpoint"))
			switch {
			case err != nil:
				logger.Error("witness checkpoint", "status", 500, "error", "the state store failed")
				plain(rw, http.StatusInternalServerError, "the witness's state could not be read")
			case !found:
				plain(rw, http.StatusNotFound, "no checkpoint cosigned for that log")
			default:
				rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
				_, _ = io.WriteString(rw, n)
			}
		default:
			plain(rw, http.StatusNotFound, "not a witness route")
		}
	})
}

func (w *Witness) serveAdd(rw http.ResponseWriter, r *http.Request, logger *slog.Logger) {
	raw, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		logger.Warn("witness add-checkpoint", "status", 413)
		plain(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is over %d bytes", MaxBodyBytes))
		return
	}
	if err != nil {
		plain(rw, http.StatusBadRequest, "the request body could not be read")
		return
	}
	old, proof, signedNote, err := ParseRequest(raw)
	if err != nil {
		logger.Warn("witness add-checkpoint", "status", 400)
		plain(rw, http.StatusBadRequest, err.Error())
		return
	}
	attrs := []any{"old", old}
	if origin, _, _ := strings.Cut(string(signedNote), "\n"); w.logs[origin].origin != "" {
		attrs = append(attrs, "origin", origin)
	}
	cosigs, err := w.AddCheckpoint(r.Context(), old, proof, signedNote)
	var rf *Refused
	switch {
	case errors.As(err, &rf) && rf.Status == http.StatusConflict:
		logger.Info("witness add-checkpoint", append(attrs, "status", rf.Status, "size", rf.Size)...)
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(rw, formatSize(rf.Size))
	case errors.As(err, &rf):
		logger.Warn("witness add-checkpoint", append(attrs, "status", rf.Status)...)
		plain(rw, rf.Status, rf.Reason)
	case err != nil:
		logger.Error("witness add-checkpoint", append(attrs, "status", 500, "error", "the state store failed")...)
		plain(rw, http.StatusInternalServerError, "the witness's state could not be read or written")
	default:
		logger.Info("witness add-checkpoint", append(attrs, "status", 200)...)
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, c := range cosigs {
			_, _ = io.WriteString(rw, c+"\n")
		}
	}
}

func plain(rw http.ResponseWriter, status int, msg string) {
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.WriteHeader(status)
	_, _ = io.WriteString(rw, msg+"\n")
}

// FormatRequest is an add-checkpoint request body: "old <size>", one line
// per entry (the base64 of the entry line: Warrant's proof, the log's
// entries from oldSize+1 to the note's size), a blank line and the note.
func FormatRequest(oldSize int64, entries []string, signedNote []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, e := range entries {
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(e)))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(signedNote)
	return b.Bytes()
}

// ParseRequest reads an add-checkpoint body strictly: the old size line
// (decimal, no leading zeros), the proof lines (each the canonical base64 of
// a UTF-8 entry line of at most MaxEntryBytes), a blank line, the note.
func ParseRequest(body []byte) (old int64, entries []string, signedNote []byte, err error) {
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	sz, isOld := strings.CutPrefix(string(line), "old ")
	if !ok || !isOld || !evidence.IsDecimal(sz) {
		return 0, nil, nil, errors.New("the first line is not an old size line (old <decimal>)")
	}
	if old, err = strconv.ParseInt(sz, 10, 64); err != nil {
		return 0, nil, nil, errors.New("the old size is out of range")
	}
	for n := 1; ; n++ {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return 0, nil, nil, errors.New("no blank line before the checkpoint")
		}
		if len(line) == 0 {
			break
		}
		e, err := base64.StdEncoding.DecodeString(string(line))
		if err != nil || base64.StdEncoding.EncodeToString(e) != string(line) {
			return 0, nil, nil, fmt.Errorf("proof line %d is not base64", n)
		}
		if len(e) > MaxEntryBytes || !utf8.Valid(e) || bytes.ContainsAny(e, "\n\r") {
			return 0, nil, nil, fmt.Errorf("proof line %d is not the base64 of one entry line", n)
		}
		entries = append(entries, string(e))
	}
	if len(rest) == 0 {
		return 0, nil, nil, errors.New("no checkpoint after the blank line")
	}
	return old, entries, rest, nil
}

// Submit sends a checkpoint to the witness at url (its submission prefix):
// POST url/add-checkpoint with oldSize, entries (the firm log's entry lines
// from oldSize+1 to the note's size, in order) and signedNote.
//
// It answers the witness's cosignature lines ("— <name> <base64>", without
// newlines: for Signed.Cosignatures, after evidence.VerifyCosignature with
// the witness's key) and the note's size. On a 409 it answers no lines, the
// size of the last checkpoint the witness cosigned for the log, and a
// *Refused with Status 409: send again with oldSize that size and the
// entries from it. Any other refusal is a *Refused with the status and the
// witness's reason, and size -1.
func Submit(ctx context.Context, hc *http.Client, url string, oldSize int64, entries []string, signedNote []byte) ([]string, int64, error) {
	body := FormatRequest(oldSize, entries, signedNote)
	if len(body) > MaxBodyBytes {
		return nil, -1, fmt.Errorf("witness: the request would be %d bytes, over %d: %d entries since size %d", len(body), MaxBodyBytes, len(entries), oldSize)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return nil, -1, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, -1, fmt.Errorf("witness: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, -1, fmt.Errorf("witness: reading the answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var lines []string
		for _, l := range strings.SplitAfter(string(raw), "\n") {
			if l == "" {
				continue
			}
			if !strings.HasPrefix(l, "— ") || !strings.HasSuffix(l, "\n") {
				return nil, -1, errors.New("witness: the answer is not signature lines")
			}
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
		if len(lines) == 0 {
			return nil, -1, errors.New("witness: the answer holds no cosignature")
		}
		_, rest, _ := strings.Cut(string(signedNote), "\n")
		sz, _, _ := strings.Cut(rest, "\n")
		size, _ := strconv.ParseInt(sz, 10, 64)
		return lines, size, nil
	case http.StatusConflict:
		s := strings.TrimSuffix(string(raw), "\n")
		size, err := strconv.ParseInt(s, 10, 64)
		if ct := resp.Header.Get("Content-Type"); ct != "text/x.tlog.size" || err != nil || !evidence.IsDecimal(s) {
			return nil, -1, fmt.Errorf("witness: a 409 that is not a tlog size (%s)", ct)
		}
		return nil, size, &Refused{Status: http.StatusConflict, Size: size, Reason: "old size mismatch"}
	default:
		reason := strings.TrimSpace(string(raw))
		if len(reason) > 512 || !utf8.ValidString(reason) {
			reason = "(an answer of " + strconv.Itoa(len(raw)) + " bytes)"
		}
		return nil, -1, &Refused{Status: resp.StatusCode, Reason: reason}
	}
}

// Entries answers the firm log's entry lines from+1 to to, in order.
type Entries func(ctx context.Context, from, to int64) ([]string, error)

// Cosign obtains the cosignature of the witness at url (known by its key w)
// on signedNote, the checkpoint of the log at size: it submits from old
// (the size of the last checkpoint the caller believes the witness
// cosigned; 0 if none) with entries(old, size), and on a 409 once more from
// the size the witness answers. It answers w's cosignature lines, checked
// (evidence.VerifyCosignature; lines by other keys are dropped), ready for
// Signed.Cosignatures, and the size the witness now holds. A witness that
// holds more than size (it cosigned a later checkpoint of this log, or of a
// fork of it) is an error, as is any refusal (*Refused).
func Cosign(ctx context.Context, hc *http.Client, url string, w evidence.WitnessKey, signedNote []byte, size, old int64, entries Entries) ([]string, int64, error) {
	for try := 0; ; try++ {
		var proof []string
		if old > 0 && old < size { // the spec's proof from 0 is empty
			var err error
			if proof, err = entries(ctx, old, size); err != nil {
				return nil, -1, err
			}
		}
		lines, held, err := Submit(ctx, hc, url, old, proof, signedNote)
		var rf *Refused
		switch {
		case errors.As(err, &rf) && rf.Status == http.StatusConflict && held > size:
			return nil, held, fmt.Errorf("witness %s holds a checkpoint of size %d, past this one's %d: %w", w.Name, held, size, err)
		case errors.As(err, &rf) && rf.Status == http.StatusConflict && try == 0:
			old = held
			continue
		case err != nil:
			return nil, held, err
		}
		var mine []string
		for _, l := range lines {
			if evidence.VerifyCosignature(string(signedNote), []string{l}, w) == nil {
				mine = append(mine, l)
			}
		}
		if len(mine) == 0 {
			return nil, held, fmt.Errorf("witness %s answered no valid cosignature by its key", w.Name)
		}
		return mine, held, nil
	}
}
