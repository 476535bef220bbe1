package main

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// The one attribute converter of the stream feeds. The Pump reads items with
// the DynamoDB API (dynamodb/types), the StreamTail reads records with the
// Streams API (dynamodbstreams/types, the same union declared again); both
// hand stream-reduce the Lambda event's events.DynamoDBAttributeValue. So a
// Streams value is first converted to the DynamoDB API's (fromStreams), and
// eventAttr alone makes event values.

// eventAttr converts a DynamoDB API attribute value to the Lambda event's,
// lists and maps recursively. A value of no known kind (nil, say) is NULL.
func eventAttr(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = eventAttr(e)
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		m := make(map[string]events.DynamoDBAttributeValue, len(v.Value))
		for k, e := range v.Value {
			m[k] = eventAttr(e)
		}
		return events.NewMapAttribute(m)
	}
	return events.NewNullAttribute()
}

// eventImage converts an item (or its keys) with eventAttr; nil stays nil.
func eventImage(m map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = eventAttr(v)
	}
	return out
}

// fromStreams converts a Streams API attribute value to the DynamoDB API's,
// lists and maps recursively. A value of no known kind (nil, say) is NULL.
func fromStreams(v st.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *st.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *st.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *st.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: v.Value}
	case *st.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *st.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *st.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: v.Value}
	case *st.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: v.Value}
	case *st.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: v.Value}
	case *st.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = fromStreams(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *st.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: fromStreamsImage(v.Value)}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

// fromStreamsImage converts a Streams API item (or its keys) with
// fromStreams; nil stays nil.
func fromStreamsImage(m map[string]st.AttributeValue) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = fromStreams(v)
	}
	return out
}
