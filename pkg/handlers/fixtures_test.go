package handlers_test

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// apiFixtures are the API Gateway v2 events in events/, with the route each
// must carry.
var apiFixtures = map[string]string{
	"invoke.json":           "POST /v1/runs",
	"approve.json":          "POST /v1/runs/{run_id}/approvals/{approval_id}",
	"resume.json":           "POST /v1/runs/{run_id}/resume",
	"reconcile-effect.json": "POST /v1/runs/{run_id}/effects/{effect_ref}/reconcile",
	"get-run.json":          "GET /v1/runs/{run_id}",
	"get-run-events.json":   "GET /v1/runs/{run_id}/events",
	"list-approvals.json":   "GET /v1/approvals",
	"get-budget.json":       "GET /v1/budget",
}

// TestFixturesListed keeps this test and events/ in step: every JSON file in
// events/ is checked by one of the tests below.
func TestFixturesListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	want := []string{"stream-reduce.json", "worker-sqs.json", "sweeper-schedule.json"}
	for name := range apiFixtures {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("events/ holds %q, tests cover %q", got, want)
	}
}

// roundTrip decodes raw into v (a pointer to an aws-lambda-go event type),
// encodes it again and compares the two documents as JSON, as aws-lambda-go's
// own event tests do. Two differences are not drift and are allowed: a member
// that is null in the fixture may be absent from the output (omitempty on a
// nil slice or map, e.g. "scopes": null), and the output may add members
// that hold only zero values (encoding/json cannot omit an empty struct
// such as requestContext.authentication, nor a non-omitempty empty string
// such as domainPrefix). Any fixture member the type does not know (a typo,
// a wrong case) or holds differently fails.
func roundTrip(t *testing.T, name string, raw []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not decode into %T: %v", name, v, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: marshal %T: %v", name, v, err)
	}
	var in, back any
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	for _, d := range jsonDiff("$", in, back) {
		t.Errorf("%s: round trip through %T: %s", name, v, d)
	}
}

func jsonDiff(path string, in, out any) []string {
	if in == nil && out == nil {
		return nil
	}
	inObj, ok1 := in.(map[string]any)
	outObj, ok2 := out.(map[string]any)
	if ok1 && ok2 {
		var diffs []string
		for k, iv := range inObj {
			ov, present := outObj[k]
			switch {
			case !present && iv == nil:
			case !present:
				diffs = append(diffs, fmt.Sprintf("%s.%s is dropped by decoding", path, k))
			default:
				diffs = append(diffs, jsonDiff(path+"."+k, iv, ov)...)
			}
		}
		for k, ov := range outObj {
			if _, present := inObj[k]; !present && !isZeroJSON(ov) {
				diffs = append(diffs, fmt.Sprintf("%s.%s appears with value %v", path, k, ov))
			}
		}
		return diffs
	}
	inArr, ok1 := in.([]any)
	outArr, ok2 := out.([]any)
	if ok1 && ok2 {
		if len(inArr) != len(outArr) {
			return []string{fmt.Sprintf("%s has %d elements, then %d", path, len(inArr), len(outArr))}
		}
		var diffs []string
		for i := range inArr {
			diffs = append(diffs, jsonDiff(fmt.Sprintf("%s[%d]", path, i), inArr[i], outArr[i])...)
		}
		return diffs
	}
	if !reflect.DeepEqual(in, out) {
		return []string{fmt.Sprintf("%s is %v, then %v", path, in, out)}
	}
	return nil
}

func isZeroJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		for _, e := range v {
			if !isZeroJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

func TestAPIFixtures(t *testing.T) {
	uuids := map[string]bool{fixFirm: true, fixUser: true, fixCounsel: true, fixMatter: true, fixRun: true, fixApproval: true,
		fixEffectRef: true}
	for name, route := range apiFixtures {
		t.Run(name, func(t *testing.T) {
			raw := loadFixture(t, name)
			var req events.APIGatewayV2HTTPRequest
			roundTrip(t, name, raw, &req)

			method, routePath, _ := strings.Cut(route, " ")
			rc := req.RequestContext
			if req.Version != "2.0" || req.RouteKey != route || rc.RouteKey != route {
				t.Errorf("version %q routeKey %q / %q, want 2.0 and %q", req.Version, req.RouteKey, rc.RouteKey, route)
			}
			if rc.Stage != "$default" || rc.HTTP.Method != method || rc.HTTP.Path != req.RawPath || rc.HTTP.Protocol != "HTTP/1.1" {
				t.Errorf("requestContext stage %q http %+v, rawPath %q", rc.Stage, rc.HTTP, req.RawPath)
			}
			if rc.AccountID == "" || rc.APIID == "" || rc.RequestID == "" || rc.Time == "" || rc.TimeEpoch == 0 ||
				rc.HTTP.SourceIP == "" || rc.HTTP.UserAgent == "" || !strings.HasPrefix(rc.DomainName, rc.APIID+".execute-api.") {
				t.Errorf("requestContext incomplete: %+v", rc)
			}
			// rawPath is routePath with the path parameters filled in.
			want := routePath
			for k, v := range req.PathParameters {
				if !strings.Contains(want, "{"+k+"}") {
					t.Errorf("path parameter %s is not in route %s", k, route)
				}
				want = strings.ReplaceAll(want, "{"+k+"}", v)
				if !uuids[v] {
					t.Errorf("path parameter %s = %q is not one of the fixed fixture ids", k, v)
				}
			}
			if req.RawPath != want {
				t.Errorf("rawPath %q, want %q from route and path parameters", req.RawPath, want)
			}
			// rawQueryString and queryStringParameters say the same thing.
			q, err := url.ParseQuery(req.RawQueryString)
			if err != nil {
				t.Fatal(err)
			}
			if len(q) != len(req.QueryStringParameters) {
				t.Errorf("rawQueryString %q vs queryStringParameters %v", req.RawQueryString, req.QueryStringParameters)
			}
			for k, v := range req.QueryStringParameters {
				if strings.Join(q[k], ",") != v {
					t.Errorf("query %s: raw %q, parsed %q", k, q[k], v)
				}
			}
			// API Gateway v2 lower-cases header names.
			for k := range req.Headers {
				if k != strings.ToLower(k) {
					t.Errorf("header %q is not lower case", k)
				}
			}
			if method == "POST" {
				if req.Headers["content-type"] != "application/json" || req.Body == "" || req.IsBase64Encoded {
					t.Errorf("POST fixture needs a plain JSON body with content-type application/json")
				}
				if n, _ := strconv.Atoi(req.Headers["content-length"]); n != len(req.Body) {
					t.Errorf("content-length %q, body is %d bytes", req.Headers["content-length"], len(req.Body))
				}
				var body map[string]any
				if err := json.Unmarshal([]byte(req.Body), &body); err != nil {
					t.Errorf("body is not a JSON object: %v", err)
				}
			} else if req.Body != "" {
				t.Errorf("GET fixture has a body")
			}
			// The JWT authorizer's claims, as API Gateway renders them.
			if rc.Authorizer == nil || rc.Authorizer.JWT == nil {
				t.Fatal("no JWT authorizer")
			}
			c := rc.Authorizer.JWT.Claims
			for _, k := range []string{"sub", "firm_id", "roles", "iss", "aud", "exp", "iat"} {
				if c[k] == "" {
					t.Errorf("claim %s missing", k)
				}
			}
			if c["firm_id"] != fixFirm || (c["sub"] != fixUser && c["sub"] != fixCounsel) {
				t.Errorf("claims firm %q sub %q are not the fixture ids", c["firm_id"], c["sub"])
			}
			if !strings.HasPrefix(c["roles"], "[") || !strings.HasSuffix(c["roles"], "]") || strings.Contains(c["roles"], `"`) {
				t.Errorf("roles %q is not rendered as API Gateway renders an array claim", c["roles"])
			}
			// The bearer token is the one the authorizer verified: its payload
			// holds exactly the claims, which the authorizer passed rendered as
			// strings (an array as its elements in brackets). Its signature is
			// not real; the function reads the payload only.
			parts := strings.Split(strings.TrimPrefix(req.Headers["authorization"], "Bearer "), ".")
			if len(parts) != 3 || !strings.HasPrefix(req.Headers["authorization"], "Bearer ") {
				t.Fatalf("authorization %q is not a bearer JWT", req.Headers["authorization"])
			}
			pb, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var payload map[string]any
			dec := json.NewDecoder(bytes.NewReader(pb))
			dec.UseNumber()
			if err := dec.Decode(&payload); err != nil {
				t.Fatal(err)
			}
			for k, v := range payload {
				var rendered string
				switch v := v.(type) {
				case string:
					rendered = v
				case json.Number:
					rendered = v.String()
				case []any:
					var els []string
					for _, e := range v {
						els = append(els, e.(string))
					}
					rendered = "[" + strings.Join(els, " ") + "]"
				}
				if c[k] != rendered {
					t.Errorf("token claim %s renders as %q, the authorizer's is %q", k, rendered, c[k])
				}
			}
			if len(payload) != len(c) {
				t.Errorf("token payload %v, claims %v", payload, c)
			}
			iat, err1 := strconv.ParseInt(c["iat"], 10, 64)
			exp, err2 := strconv.ParseInt(c["exp"], 10, 64)
			if err1 != nil || err2 != nil || !(iat <= rc.TimeEpoch/1000 && rc.TimeEpoch/1000 < exp) {
				t.Errorf("iat %q exp %q do not bracket the request time %d", c["iat"], c["exp"], rc.TimeEpoch)
			}
		})
	}
}

func TestAPIFixtureBodies(t *testing.T) {
	var inv struct {
		AgentKey, MatterID, CounselMessage string
	}
	decodeFixtureBody(t, "invoke.json", &inv)
	if inv.AgentKey != "matter_assistant" || inv.MatterID != fixMatter || inv.CounselMessage != "Please file the motion to compel discovery." {
		t.Errorf("invoke body %+v", inv)
	}
	var apr struct{ Decision, ToolInputHash string }
	decodeFixtureBody(t, "approve.json", &apr)
	if apr.Decision != "approve" || !contracts.IsHash(apr.ToolInputHash) {
		t.Errorf("approve body %+v", apr)
	}
	var res struct{ ApprovalRequestID string }
	decodeFixtureBody(t, "resume.json", &res)
	var rec struct{ Outcome, ExternalRef, Note string }
	decodeFixtureBody(t, "reconcile-effect.json", &rec)
	if rec.Outcome != "executed" || rec.ExternalRef == "" {
		t.Errorf("reconcile-effect.json body %+v", rec)
	}
	if res.ApprovalRequestID != fixApproval {
		t.Errorf("resume body %+v", res)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(loadFixture(t, "approve.json"), &req); err != nil {
		t.Fatal(err)
	}
	if c := req.RequestContext.Authorizer.JWT.Claims; c["sub"] != fixCounsel || !strings.Contains(c["roles"], "counsel") {
		t.Errorf("approve.json is not a counsel's request: %v", c)
	}
}

// decodeFixtureBody decodes a fixture's body with the field names of the
// handler's body (snake_case), refusing unknown members.
func decodeFixtureBody(t *testing.T, name string, v any) {
	t.Helper()
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(loadFixture(t, name), &req); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(req.Body), &m); err != nil {
		t.Fatal(err)
	}
	camel := map[string]json.RawMessage{}
	for k, raw := range m {
		var b strings.Builder
		for _, part := range strings.Split(k, "_") {
			if part == "id" {
				b.WriteString("ID")
			} else if part != "" {
				b.WriteString(strings.ToUpper(part[:1]) + part[1:])
			}
		}
		camel[b.String()] = raw
	}
	data, _ := json.Marshal(camel)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s body: %v", name, err)
	}
}

func TestStreamFixture(t *testing.T) {
	raw := loadFixture(t, "stream-reduce.json")
	var ev events.DynamoDBEvent
	roundTrip(t, "stream-reduce.json", raw, &ev)
	if n := len(ev.Records); n < 2 || n > 3 {
		t.Fatalf("%d records, want 2-3", n)
	}
	var st reducer.RunState
	seen := map[string]bool{}
	for i, r := range ev.Records {
		if r.EventName != "INSERT" || r.EventSource != "aws:dynamodb" || r.AWSRegion == "" || r.EventVersion == "" || r.EventID == "" ||
			!strings.HasPrefix(r.EventSourceArn, "arn:aws:dynamodb:"+r.AWSRegion+":") || !strings.Contains(r.EventSourceArn, "/stream/") {
			t.Errorf("record %d header: %+v", i, r)
		}
		c := r.Change
		if c.StreamViewType != "NEW_IMAGE" || c.SequenceNumber == "" || c.SizeBytes <= 0 || c.ApproximateCreationDateTime.IsZero() || c.OldImage != nil {
			t.Errorf("record %d stream record: view %q seq %q size %d time %v", i, c.StreamViewType, c.SequenceNumber, c.SizeBytes, c.ApproximateCreationDateTime)
		}
		if seen[c.SequenceNumber] {
			t.Errorf("record %d: sequence number %s repeats", i, c.SequenceNumber)
		}
		seen[c.SequenceNumber] = true
		if len(c.Keys) != 2 || c.Keys["PK"].String() != c.NewImage["PK"].String() || c.Keys["SK"].String() != c.NewImage["SK"].String() {
			t.Errorf("record %d: Keys %v do not match the image", i, c.Keys)
		}
		if pk := c.Keys["PK"].String(); pk != "FIRM#"+fixFirm+"#RUN#"+fixRun {
			t.Errorf("record %d: PK %q", i, pk)
		}
		// The image is a stored ledger line: its bytes parse, verify and
		// chain on from the previous record's.
		line, err := contracts.ParseEventLine([]byte(c.NewImage["line"].String()))
		if err != nil {
			t.Fatalf("record %d: line does not parse: %v", i, err)
		}
		if st, err = reducer.Apply(st, line); err != nil {
			t.Fatalf("record %d: line does not chain: %v", i, err)
		}
		if sk := c.NewImage["SK"].String(); sk != fmt.Sprintf("EVT#%012d", line.Seq) {
			t.Errorf("record %d: SK %q for seq %d", i, sk, line.Seq)
		}
		if n := c.NewImage["seq"].Number(); n != strconv.FormatInt(line.Seq, 10) {
			t.Errorf("record %d: seq attribute %q, line seq %d", i, n, line.Seq)
		}
		if typ := c.NewImage["type"].String(); typ != string(line.Type) {
			t.Errorf("record %d: type attribute %q, line type %q", i, typ, line.Type)
		}
		if line.FirmID != fixFirm || line.RunID != fixRun {
			t.Errorf("record %d: line of firm %s run %s", i, line.FirmID, line.RunID)
		}
	}
	if st.RunID != fixRun || st.MatterID != fixMatter {
		t.Errorf("folded fixture: run %q matter %q", st.RunID, st.MatterID)
	}
}

// TestWorkerFixture: events/worker-sqs.json is what Lambda's SQS event
// source mapping sends the worker: one record of the worker queue holding a
// started WorkerMessage for the fixture run.
func TestWorkerFixture(t *testing.T) {
	raw := loadFixture(t, "worker-sqs.json")
	var ev events.SQSEvent
	roundTrip(t, "worker-sqs.json", raw, &ev)
	if len(ev.Records) != 1 {
		t.Fatalf("%d records, want 1 (the worker's BatchSize)", len(ev.Records))
	}
	r := ev.Records[0]
	if r.EventSource != "aws:sqs" || r.AWSRegion == "" || !strings.HasPrefix(r.EventSourceARN, "arn:aws:sqs:"+r.AWSRegion+":") ||
		r.MessageId == "" || r.ReceiptHandle == "" {
		t.Errorf("record header %+v", r)
	}
	if sum := md5.Sum([]byte(r.Body)); r.Md5OfBody != hex.EncodeToString(sum[:]) {
		t.Errorf("md5OfBody %s is not the body's MD5", r.Md5OfBody)
	}
	for _, k := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
		if r.Attributes[k] == "" {
			t.Errorf("attribute %s missing", k)
		}
	}
	if r.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("ApproximateReceiveCount %q, want 1 (a first delivery)", r.Attributes["ApproximateReceiveCount"])
	}
	m, err := contracts.DecodeWorkerMessage([]byte(r.Body))
	if err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	if m.FirmID != fixFirm || m.RunID != fixRun || m.Reason != contracts.ReasonStarted {
		t.Errorf("worker message %+v, want a started message for firm %s run %s", m, fixFirm, fixRun)
	}
}

// TestSweeperFixture: events/sweeper-schedule.json is EventBridge
// Scheduler's default notification for the template's ScheduleV2 event
// (SAM names the schedule <function logical id><event name>).
func TestSweeperFixture(t *testing.T) {
	raw := loadFixture(t, "sweeper-schedule.json")
	var ev events.EventBridgeEvent
	roundTrip(t, "sweeper-schedule.json", raw, &ev)
	if ev.Version != "0" || ev.DetailType != "Scheduled Event" || ev.Source != "aws.scheduler" || ev.ID == "" || ev.AccountID == "" ||
		ev.Region == "" || ev.Time.IsZero() || string(ev.Detail) != `"{}"` {
		t.Errorf("event %+v (detail %s)", ev, ev.Detail)
	}
	if want := "arn:aws:scheduler:" + ev.Region + ":" + ev.AccountID + ":schedule/default/SweeperFunctionSweep"; len(ev.Resources) != 1 || ev.Resources[0] != want {
		t.Errorf("resources %v, want [%s]", ev.Resources, want)
	}
}

// TestFixturesAreTidy guards against a fixture written with CRLF or
// without a final newline by an editor (sam local reads them as they are).
func TestFixturesAreTidy(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("\r")) || !bytes.HasSuffix(b, []byte("}\n")) {
			t.Errorf("%s: want LF line endings and a final newline", filepath.Base(f))
		}
	}
}
