package dynamotest

import (
	"net/http/httptest"
	"testing"

	"github.com/truora/minidyn/server"
)

// Minidyn starts minidyn's DynamoDB server (github.com/truora/minidyn/server)
// behind httptest.NewServer, private to the test, and returns it as an
// endpoint. It is linearizable (one lock around every operation), supports
// conditional writes and TransactWriteItems, and is lenient where noted.
func Minidyn(t testing.TB) *Endpoint {
	t.Helper()
	ts := httptest.NewServer(server.NewServer())
	t.Cleanup(ts.Close)
	counter, faults := &Counter{}, &Faults{}
	return &Endpoint{
		Name:    "minidyn",
		URL:     ts.URL,
		Client:  newClient(t, ts.URL, counter, faults, nil),
		Counter: counter,
		Faults:  faults,
		// minidyn stops at the first failing transaction item and reports
		// "None" for every other one.
		ReportsAllReasons: false,
		Lenient: []string{
			LenientConsistentReadOnGSI, LenientPutAllOld, LenientTableStatus, LenientStreams, LenientUpdateRemove,
			LenientItemSize,
		},
	}
}
