package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

// localWitness is a witness on loopback (pkg/witness, as cmd/witness
// serves it) standing in for the one a client or insurer runs: it witnesses
// the demo's firms' logs under the stack's receipt key, keeps its state in
// dir/state, and its key's verifier key is dir/witness.vkey (for warrant
// evidence verify --witness).
type localWitness struct {
	URL, VKey, VKeyFile string
	Key                 evidence.WitnessKey
	srv                 *http.Server
}

// startWitness starts the local witness in dir for the logs the receipt key
// spec (a local p256: key) signs under the default origin prefix.
func startWitness(dir, receiptKey string) (*localWitness, error) {
	if !strings.HasPrefix(receiptKey, "p256:") {
		return nil, errors.New("the receipt key is not a local key")
	}
	k, err := evidence.ParseP256(receiptKey)
	if err != nil {
		return nil, err
	}
	var cfg witness.Config
	for _, firm := range []string{walkthrough.Firm, walkthrough.OtherFirm} {
		vkey, err := evidence.VerifierKey(evidence.Origin("", firm), k.Public())
		if err != nil {
			return nil, err
		}
		cfg.Logs = append(cfg.Logs, witness.LogConfig{VKey: vkey})
	}
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
		return nil, err
	}
	skey, vkey, err := witness.GenerateKey("localhost/witness")
	if err != nil {
		return nil, err
	}
	store, err := witness.NewDirStore(filepath.Join(dir, "state"))
	if err != nil {
		return nil, err
	}
	w, err := witness.New(cfg, skey, store)
	if err != nil {
		return nil, err
	}
	key, err := evidence.ParseWitnessKey(vkey)
	if err != nil {
		return nil, err
	}
	lw := &localWitness{VKey: vkey, VKeyFile: filepath.Join(dir, "witness.vkey"), Key: key}
	if err := os.WriteFile(lw.VKeyFile, []byte(vkey+"\n"), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lw.URL = "http://" + ln.Addr().String()
	lw.srv = &http.Server{Handler: w.Handler("", nil), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = lw.srv.Serve(ln) }()
	return lw, nil
}

// witnesses is the sweeper's WITNESSES naming w.
func (w *localWitness) witnesses() string {
	b, _ := json.Marshal([]map[string]string{{"url": w.URL, "vkey": w.VKey}})
	return string(b)
}

func (w *localWitness) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}
