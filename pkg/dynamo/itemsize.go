package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// MaxItemBytes is DynamoDB's item size limit: 400 KB, attribute names
// included. An item over it is refused with a ValidationException, which
// would reach a caller as an internal error; the store checks the items an
// input can make big before it writes them (checkItemSize).
const MaxItemBytes = 400 << 10

// itemSize is an upper bound of an item's size as DynamoDB counts it: each
// attribute's name and value, strings and binaries by their bytes, a number
// at its largest (21 bytes), a boolean or null 1, a list or map 3 bytes and
// 1 per element beside the elements (and a map's keys), a set its members.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	const maxNumber = 21
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return maxNumber
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + itemSize(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberNS:
		return maxNumber * len(v.Value)
	case *types.AttributeValueMemberBS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return MaxItemBytes + 1 // a kind not listed here is not written unmeasured
}

// checkItemSize refuses an item over MaxItemBytes as warrant.ErrTooLarge,
// with userMsg (which names what was too large) for the client.
func checkItemSize(item map[string]types.AttributeValue, userMsg, format string, args ...any) error {
	if n := itemSize(item); n > MaxItemBytes {
		return failure.Wrap(failure.KindPayloadTooLarge, userMsg, fail(warrant.ErrTooLarge, nil, format+" (%d bytes)", append(args, n)...))
	}
	return nil
}
