package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestAttrConversion: every attribute kind, read with the DynamoDB API
// (Pump) or the Streams API (StreamTail), reaches stream-reduce as the same
// event value, in the JSON the event source mapping sends.
func TestAttrConversion(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		ddb     types.AttributeValue
		streams st.AttributeValue
		want    events.DynamoDBAttributeValue
		json    string
	}{
		{"S", &types.AttributeValueMemberS{Value: "EVT#000000000001"}, &st.AttributeValueMemberS{Value: "EVT#000000000001"},
			events.NewStringAttribute("EVT#000000000001"), `{"S":"EVT#000000000001"}`},
		{"N", &types.AttributeValueMemberN{Value: "42"}, &st.AttributeValueMemberN{Value: "42"},
			events.NewNumberAttribute("42"), `{"N":"42"}`},
		{"B", &types.AttributeValueMemberB{Value: []byte{0, 1, 0xff}}, &st.AttributeValueMemberB{Value: []byte{0, 1, 0xff}},
			events.NewBinaryAttribute([]byte{0, 1, 0xff}), `{"B":"AAH/"}`},
		{"BOOL", &types.AttributeValueMemberBOOL{Value: true}, &st.AttributeValueMemberBOOL{Value: true},
			events.NewBooleanAttribute(true), `{"BOOL":true}`},
		{"BOOL false", &types.AttributeValueMemberBOOL{}, &st.AttributeValueMemberBOOL{},
			events.NewBooleanAttribute(false), `{"BOOL":false}`},
		{"NULL", &types.AttributeValueMemberNULL{Value: true}, &st.AttributeValueMemberNULL{Value: true},
			events.NewNullAttribute(), `{"NULL":true}`},
		{"SS", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, &st.AttributeValueMemberSS{Value: []string{"a", "b"}},
			events.NewStringSetAttribute([]string{"a", "b"}), `{"SS":["a","b"]}`},
		{"NS", &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}}, &st.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
			events.NewNumberSetAttribute([]string{"1", "2.5"}), `{"NS":["1","2.5"]}`},
		{"BS", &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}, &st.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
			events.NewBinarySetAttribute([][]byte{{1}, {2, 3}}), `{"BS":["AQ==","AgM="]}`},
		{"L", &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "x"},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "1"}}},
		}}, &st.AttributeValueMemberL{Value: []st.AttributeValue{
			&st.AttributeValueMemberS{Value: "x"},
			&st.AttributeValueMemberL{Value: []st.AttributeValue{&st.AttributeValueMemberN{Value: "1"}}},
		}}, events.NewListAttribute([]events.DynamoDBAttributeValue{
			events.NewStringAttribute("x"),
			events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewNumberAttribute("1")}),
		}), `{"L":[{"S":"x"},{"L":[{"N":"1"}]}]}`},
		{"L empty", &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, &st.AttributeValueMemberL{Value: []st.AttributeValue{}},
			events.NewListAttribute([]events.DynamoDBAttributeValue{}), `{"L":[]}`},
		{"M nested", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"payload": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"ok":   &types.AttributeValueMemberBOOL{Value: true},
				"tags": &types.AttributeValueMemberSS{Value: []string{"t"}},
				"none": &types.AttributeValueMemberNULL{Value: true},
				"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberB{Value: []byte("b")}}},
			}},
			"seq": &types.AttributeValueMemberN{Value: "7"},
		}}, &st.AttributeValueMemberM{Value: map[string]st.AttributeValue{
			"payload": &st.AttributeValueMemberM{Value: map[string]st.AttributeValue{
				"ok":   &st.AttributeValueMemberBOOL{Value: true},
				"tags": &st.AttributeValueMemberSS{Value: []string{"t"}},
				"none": &st.AttributeValueMemberNULL{Value: true},
				"list": &st.AttributeValueMemberL{Value: []st.AttributeValue{&st.AttributeValueMemberB{Value: []byte("b")}}},
			}},
			"seq": &st.AttributeValueMemberN{Value: "7"},
		}}, events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"payload": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
				"ok":   events.NewBooleanAttribute(true),
				"tags": events.NewStringSetAttribute([]string{"t"}),
				"none": events.NewNullAttribute(),
				"list": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewBinaryAttribute([]byte("b"))}),
			}),
			"seq": events.NewNumberAttribute("7"),
		}), `{"M":{"payload":{"M":{"list":{"L":[{"B":"Yg=="}]},"none":{"NULL":true},"ok":{"BOOL":true},"tags":{"SS":["t"]}}},"seq":{"N":"7"}}}`},
		{"M empty", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}, &st.AttributeValueMemberM{Value: map[string]st.AttributeValue{}},
			events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}), `{"M":{}}`},
		{"unknown is NULL", nil, nil, events.NewNullAttribute(), `{"NULL":true}`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			for _, c := range []struct {
				from string
				got  events.DynamoDBAttributeValue
			}{
				{"dynamodb", eventAttr(tc.ddb)},
				{"dynamodbstreams", eventAttr(fromStreams(tc.streams))},
			} {
				if !reflect.DeepEqual(c.got, tc.want) {
					t.Errorf("from %s: got %#v, want %#v", c.from, c.got, tc.want)
				}
				b, err := json.Marshal(c.got)
				if err != nil {
					t.Fatalf("from %s: marshal: %v", c.from, err)
				}
				if string(b) != tc.json {
					t.Errorf("from %s: JSON %s, want %s", c.from, b, tc.json)
				}
			}
		})
	}
}

// TestImages: a whole item converts key by key, and no image stays no image.
func TestImages(t *testing.T) {
	if eventImage(nil) != nil || fromStreamsImage(nil) != nil {
		t.Fatal("a nil image must stay nil (a record without NewImage)")
	}
	item := map[string]st.AttributeValue{
		"PK":  &st.AttributeValueMemberS{Value: "FIRM#f#RUN#r"},
		"SK":  &st.AttributeValueMemberS{Value: "EVT#000000000003"},
		"seq": &st.AttributeValueMemberN{Value: "3"},
	}
	got := eventImage(fromStreamsImage(item))
	if len(got) != 3 || got["PK"].String() != "FIRM#f#RUN#r" || got["SK"].String() != "EVT#000000000003" || got["seq"].Number() != "3" {
		t.Fatalf("image %v", got)
	}
}
