package deploy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

type route struct{ Method, Path string }

func (r route) String() string { return r.Method + " " + r.Path }

// wantRoutes is the HTTP API of shared/DESIGN.md §9 and the function serving
// each route.
var wantRoutes = map[route]string{
	{"POST", "/v1/runs"}: "InvokeFunction",
	{"POST", "/v1/runs/{run_id}/approvals/{approval_id}"}:        "ApproveFunction",
	{"POST", "/v1/runs/{run_id}/effects/{effect_ref}/reconcile"}: "ApproveFunction",
	{"POST", "/v1/runs/{run_id}/resume"}:                         "ResumeFunction",
	{"GET", "/v1/runs/{run_id}"}:                                 "RunsFunction",
	{"GET", "/v1/runs/{run_id}/events"}:                          "RunsFunction",
	{"GET", "/v1/approvals"}:                                     "RunsFunction",
	{"GET", "/v1/budget"}:                                        "RunsFunction",
	{"GET", "/v1/runs/{run_id}/evidence"}:                        "RunsFunction",
	{"GET", "/v1/runs/{run_id}/receipts"}:                        "RunsFunction",
	{"GET", "/v1/evidence/log"}:                                  "RunsFunction",
	{"GET", "/v1/keys"}:                                          "RunsFunction",
	{"GET", "/v1/matters"}:                                       "RunsFunction",
	{"GET", "/v1/matters/{matter_id}"}:                           "RunsFunction",
	{"GET", "/v1/matters/{matter_id}/versions"}:                  "RunsFunction",
	{"PUT", "/v1/matters/{matter_id}"}:                           "ApproveFunction",
	{"GET", "/v1/matters/{matter_id}/hold"}:                      "RunsFunction",
	{"PUT", "/v1/matters/{matter_id}/hold"}:                      "ApproveFunction",
	{"DELETE", "/v1/matters/{matter_id}/hold"}:                   "ApproveFunction",
	{"POST", "/v1/matters/{matter_id}/destroy"}:                  "ApproveFunction",
	{"PUT", "/v1/settings"}:                                      "ApproveFunction",
	{"GET", "/v1/settings"}:                                      "RunsFunction",
	{"GET", "/v1/tools"}:                                         "ApproveFunction",
	{"GET", "/desk"}:                                             "RunsFunction",
	{"GET", "/desk/{proxy+}"}:                                    "RunsFunction",
}

// publicRoutes are the routes without the JWT authorizer: the counsel's
// desk's page and assets, which hold no data and no authority (every API
// call the page makes carries counsel's token).
var publicRoutes = map[route]bool{{"GET", "/desk"}: true, {"GET", "/desk/{proxy+}"}: true}

// eventOwners says which function alone may have events of each type other
// than HttpApi: the stream feeds stream-reduce, the worker queue the worker,
// the schedule the sweeper.
var eventOwners = map[string]string{
	"DynamoDB":   "StreamReduceFunction",
	"SQS":        "WorkerFunction",
	"ScheduleV2": "SweeperFunction",
}

func TestRoutes(t *testing.T) {
	tmpl := typedTemplate(t)
	raw := rawTemplate(t)
	got := map[route]string{}
	for id, fn := range tmpl.GetAllServerlessFunctionResources() {
		for name, ev := range fn.Events {
			switch ev.Type {
			case "HttpApi":
				h := ev.Properties.HttpApiEvent
				if h == nil || h.Method == nil || h.Path == nil {
					t.Errorf("%s.%s: HttpApi event without Method and Path", id, name)
					continue
				}
				r := route{strings.ToUpper(*h.Method), *h.Path}
				if prev, dup := got[r]; dup {
					t.Errorf("route %s is served by both %s and %s", r, prev, id)
				}
				got[r] = id
				switch {
				case publicRoutes[r]:
					if h.Auth == nil || h.Auth.Authorizer == nil || *h.Auth.Authorizer != "NONE" {
						t.Errorf("%s.%s: the desk's route %s must be public (Auth: Authorizer: NONE)", id, name, r)
					}
				case h.Auth != nil:
					t.Errorf("%s.%s overrides Auth: every API route must use the default JWT authorizer", id, name)
				}
				// ApiId is a Ref to a resource, which goformation drops (limit 2).
				if api := refOf(get(resourcesOf(raw)[id], "Properties", "Events", name, "Properties", "ApiId")); api != "HttpApi" {
					t.Errorf("%s.%s: ApiId must be !Ref HttpApi, got %q", id, name, api)
				}
			case "DynamoDB", "SQS", "ScheduleV2":
				if owner := eventOwners[ev.Type]; id != owner {
					t.Errorf("%s.%s: a %s event, which only %s has", id, name, ev.Type, owner)
				}
			default:
				t.Errorf("%s.%s: unexpected event type %s", id, name, ev.Type)
			}
		}
	}
	for typ, owner := range eventOwners {
		n := 0
		for _, ev := range tmpl.GetAllServerlessFunctionResources()[owner].Events {
			if ev.Type == typ {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s has %d %s events, want 1", owner, n, typ)
		}
	}
	for r, id := range wantRoutes {
		if got[r] != id {
			t.Errorf("route %s: served by %q, want %s", r, got[r], id)
		}
	}
	for r, id := range got {
		if _, ok := wantRoutes[r]; !ok {
			t.Errorf("route %s (%s) is not in the API of shared/DESIGN.md", r, id)
		}
	}
}

// TestHTTPAPIAuthorizerAndAccessLog reads Auth and AccessLogSettings raw
// (AccessLogSettings: goformation limit 1).
func TestHTTPAPIAuthorizerAndAccessLog(t *testing.T) {
	raw := rawTemplate(t)
	apis := ofType(raw, "AWS::Serverless::HttpApi")
	if len(apis) != 1 {
		t.Fatalf("want one AWS::Serverless::HttpApi, got %v", keys(apis))
	}
	api := mustResource(t, raw, "HttpApi", "AWS::Serverless::HttpApi")
	p, _ := api["Properties"].(object)
	if refOf(p["StageName"]) != "Stage" {
		t.Errorf("StageName must be !Ref Stage, got %v", p["StageName"])
	}
	if _, ok := p["CorsConfiguration"]; ok {
		t.Error("CORS must stay off (no CorsConfiguration)")
	}
	def := str(get(p, "Auth", "DefaultAuthorizer"))
	auth, _ := get(p, "Auth", "Authorizers", def).(object)
	if def == "" || auth == nil {
		t.Fatalf("HttpApi needs Auth.DefaultAuthorizer naming one of Auth.Authorizers, got %v", get(p, "Auth"))
	}
	if auth["IdentitySource"] != "$request.header.Authorization" {
		t.Errorf("authorizer %s: IdentitySource = %v", def, auth["IdentitySource"])
	}
	if refOf(get(auth, "JwtConfiguration", "issuer")) != "JwtIssuer" {
		t.Errorf("authorizer %s: JwtConfiguration.issuer must be !Ref JwtIssuer", def)
	}
	aud := list(get(auth, "JwtConfiguration", "audience"))
	if len(aud) != 1 || refOf(aud[0]) != "JwtAudience" {
		t.Errorf("authorizer %s: JwtConfiguration.audience must be [!Ref JwtAudience], got %v", def, aud)
	}

	dest, attr, ok := getAtt(get(p, "AccessLogSettings", "DestinationArn"))
	if !ok || attr != "Arn" {
		t.Errorf("AccessLogSettings.DestinationArn must be !GetAtt <LogGroup>.Arn")
	} else {
		mustResource(t, raw, dest, "AWS::Logs::LogGroup")
	}
	var format map[string]string
	if err := json.Unmarshal([]byte(str(get(p, "AccessLogSettings", "Format"))), &format); err != nil {
		t.Fatalf("AccessLogSettings.Format must be a JSON object of strings: %v", err)
	}
	vals := map[string]bool{}
	for k, v := range format {
		vals[v] = true
		lv := strings.ToLower(v)
		if strings.Contains(lv, "body") || strings.Contains(lv, "header") || strings.Contains(lv, "claims") {
			t.Errorf("access log field %s logs %s: no bodies, headers or claims", k, v)
		}
	}
	for _, want := range []string{"$context.requestId", "$context.routeKey", "$context.status"} {
		if !vals[want] {
			t.Errorf("access log format lacks %s", want)
		}
	}
}

// integrationTimeout is API Gateway's HTTP API limit on an integration: it
// answers 503 after 30 s whatever the function's Timeout.
const integrationTimeout = 30

// TestRunsFunctionOutlastsTheLongestWait: GET /v1/runs/{id}?wait=MaxWait
// waits up to MaxWait seconds and then reads the ledger, which the handler
// keeps WaitMargin for; the runs function's Timeout must hold both, and stay
// within API Gateway's integration timeout so the function, not the
// gateway, ends a call that overruns. (At the Globals' 10 s every long poll
// of a running run timed out.)
func TestRunsFunctionOutlastsTheLongestWait(t *testing.T) {
	raw := rawTemplate(t)
	timeout := time.Duration(functionTimeout(raw, "RunsFunction")) * time.Second
	need := handlers.MaxWait*time.Second + handlers.WaitMargin
	if timeout <= need || timeout > integrationTimeout*time.Second {
		t.Errorf("RunsFunction: Timeout %s, want more than ?wait's %d s plus the handler's %s margin (%s) and at most API Gateway's %d s",
			timeout, handlers.MaxWait, handlers.WaitMargin, need, integrationTimeout)
	}
}
