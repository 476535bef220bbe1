package contracts_test

import (
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

func ExampleInputHash() {
	// Key order and whitespace do not change what counsel signs.
	a, _ := contracts.InputHash([]byte(`{"court": "SF Superior", "title": "Motion"}`))
	b, _ := contracts.InputHash([]byte(`{"title":"Motion","court":"SF Superior"}`))
	fmt.Println(a == b)
	// Output: true
}

func ExampleDecodeStrict() {
	var msg contracts.HistoryMessage
	err := contracts.DecodeStrict([]byte(`{"role":"user","Text":"File the motion."}`), &msg)
	fmt.Println(err)
	// Output: field Text: unknown field
}

func ExampleParseEventLine() {
	chain := contracts.NewChain("5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b")
	line, _ := chain.Append(&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."})
	parsed, err := contracts.ParseEventLine(line.Raw)
	fmt.Println(parsed.Seq, parsed.Type, err)
	if done, ok := parsed.Event.(*contracts.RunCompleted); ok {
		fmt.Println(done.FinalText)
	}
	// Output:
	// 1 run.completed <nil>
	// Done.
}
