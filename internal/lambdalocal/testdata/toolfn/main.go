// Command toolfn is the Lambda function the tests of internal/lambdalocal
// and pkg/lambdatarget run under the emulator. It takes the payload
// pkg/lambdatarget sends ({"effect_ref", "firm_id", "run_id", "matter_id",
// "tool", "input"}), and its input's "do" picks what it does:
//
//   - "echo" (or nothing): answers the payload it received, byte for byte;
//   - "text": answers bytes that are not JSON;
//   - "fail": returns a handler error whose message is the input's "say";
//   - "sleep": sleeps "sleep_ms" milliseconds, then echoes (past the
//     function's timeout, the invocation times out);
//   - "exit": the process exits mid-call without answering.
//
// Before anything else it appends the effect_ref it received, one a line, to
// the file named by TOOLFN_EFFECTS (when set), so that a test can count how
// many times an effect ran.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type call struct {
	EffectRef string `json:"effect_ref"`
	Input     struct {
		Do      string `json:"do"`
		Say     string `json:"say"`
		SleepMS int    `json:"sleep_ms"`
	} `json:"input"`
}

// handler takes and answers raw bytes (lambda.Handler), so an echo is the
// payload exactly as it arrived.
type handler struct{}

func (handler) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	var c call
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("toolfn: the payload is not the call object: %w", err)
	}
	if err := record(c.EffectRef); err != nil {
		return nil, err
	}
	switch c.Input.Do {
	case "", "echo":
		return payload, nil
	case "text":
		return []byte("plain text, not JSON"), nil
	case "fail":
		return nil, errors.New(c.Input.Say)
	case "sleep":
		time.Sleep(time.Duration(c.Input.SleepMS) * time.Millisecond)
		return payload, nil
	case "exit":
		os.Exit(3)
	}
	return nil, fmt.Errorf("toolfn: unknown do %q", c.Input.Do)
}

// record appends ref to TOOLFN_EFFECTS, if set.
func record(ref string) error {
	path := os.Getenv("TOOLFN_EFFECTS")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(ref + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func main() { lambda.Start(handler{}) }
