package witness_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

// stores are the two Store implementations, each fresh.
func stores(t *testing.T) map[string]func(t *testing.T) witness.Store {
	return map[string]func(t *testing.T) witness.Store{
		"dir": func(t *testing.T) witness.Store {
			s, err := witness.NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"dynamodb (minidyn)": func(t *testing.T) witness.Store {
			ep := dynamotest.Minidyn(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := ep.Client.CreateTable(ctx, witness.TableInput("witness-test")); err != nil {
				t.Fatal(err)
			}
			return witness.DynamoStore{Client: ep.Client, Table: "witness-test"}
		},
	}
}

// Each store: the zero State for a log never cosigned; Swap from the size
// kept and only from it; concurrent Swaps from the same old size: exactly
// one wins, the others answer the winner's size and wrote nothing.
func TestStores(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := mk(t)
			const origin = "warrant.example/firm/f1"
			if st, err := s.Load(ctx, origin); err != nil || st != (witness.State{}) {
				t.Fatalf("a fresh store: %+v %v", st, err)
			}
			one := witness.State{Size: 1, Head: "aa", Note: "n1\n"}
			if err := s.Swap(ctx, origin, 0, one); err != nil {
				t.Fatal(err)
			}
			var sc *witness.SizeChanged
			if err := s.Swap(ctx, origin, 0, witness.State{Size: 9, Head: "zz", Note: "n9\n"}); !errors.As(err, &sc) || sc.Size != 1 {
				t.Fatalf("a swap from a stale size: %v", err)
			}
			if st, err := s.Load(ctx, origin); err != nil || st != one {
				t.Fatalf("after a refused swap: %+v %v", st, err)
			}
			if st, _ := s.Load(ctx, "warrant.example/firm/f2"); st != (witness.State{}) {
				t.Fatalf("another origin shares the state: %+v", st)
			}

			const n = 8
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					errs[i] = s.Swap(ctx, origin, 1, witness.State{Size: int64(10 + i), Head: fmt.Sprint(i), Note: "n\n"})
				})
			}
			wg.Wait()
			winner := -1
			for i, err := range errs {
				if err == nil {
					if winner >= 0 {
						t.Fatalf("swaps %d and %d both won", winner, i)
					}
					winner = i
				} else if !errors.As(err, &sc) {
					t.Fatalf("swap %d: %v", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no swap won")
			}
			st, err := s.Load(ctx, origin)
			if err != nil || st.Size != int64(10+winner) || st.Head != fmt.Sprint(winner) {
				t.Fatalf("kept %+v %v, the winner was %d", st, err, winner)
			}
			for i, err := range errs {
				if i != winner && (!errors.As(err, &sc) || sc.Size != int64(10+winner)) {
					t.Fatalf("loser %d: %v", i, err)
				}
			}
		})
	}
}

// The witness on the DynamoDB store: a rewritten history is refused there
// too, and the state survives a new Witness over the same table.
func TestWitnessOnDynamo(t *testing.T) {
	store := stores(t)["dynamodb (minidyn)"](t)
	f := newFixture(t, store)
	f.log.add("r1", "removed", "r3")
	mustCosign(t, f, 0, nil, f.log.note(3))
	rewritten := newFirmLog(t, f.log.key).add("r1", "r3", "r4", "r5")
	refusal(t, second(f.submit(t, 3, rewritten.lines[3:4], rewritten.note(4))), 422)
	f.log.add("r4")
	mustCosign(t, f, 3, f.log.lines[3:4], f.log.note(4))
	_, size, err := f.submit(t, 3, f.log.lines[3:4], f.log.note(4))
	if refusal(t, err, 409); size != 4 {
		t.Fatalf("size %d", size)
	}
}
