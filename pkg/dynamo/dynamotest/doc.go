// Package dynamotest provides the DynamoDB endpoints the store's conformance
// suite runs against, each reached by the real aws-sdk-go-v2 client through
// BaseEndpoint:
//
//   - Minidyn: github.com/truora/minidyn's server behind httptest, private
//     to each test. Fast; lenient where the Lenient* names say.
//   - Moto: one moto_server process per test binary on a free loopback
//     port, for fidelity (every cancellation reason, ALL_OLD on failed puts,
//     ConsistentRead on a GSI rejected, streams). Missing moto_server skips,
//     except with CI=true, where it fails. Requests to it are serialized
//     (LenientSerialized).
//   - External: DYNAMODB_ENDPOINT, when set.
//
// Each endpoint has its own client and a Counter of round trips per
// operation (calls the endpoint answered, however often the SDK sent each).
// Use Main from TestMain so a started moto_server is stopped:
//
//	func TestMain(m *testing.M) { dynamotest.Main(m) }
package dynamotest
