package deploy

// Counsel are told when a warrant waits (issue 21, item 1): stream-reduce
// and the sweeper publish notifications (pkg/notify) to the stack's
// EventBridge bus; NotifyCounselRule sends the three that want counsel now
// to an encrypted SNS topic, which mails NotificationEmail when it is set.
// Which grants each role holds exactly is TestIAMLeastPrivilege's; these
// tests check who may publish at all, what the rule matches and sends, who
// may use the topic, its key and the rule's dead-letter queue, and the
// subscription. docs/DEPLOY.md, "Notifications", says the same in prose.

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
)

// notifyPublishers are the functions that publish notifications, by the
// functions/ package config.FunctionVars lists EVENT_BUS_NAME for.
var notifyPublishers = []string{"StreamReduceFunction", "SweeperFunction"}

// counselTypes are the detail types NotifyCounselRule sends counsel.
var counselTypes = []string{notify.WarrantPending, notify.WarrantExpiring, notify.EffectOutcomeUnknown}

var busArn = object{"Fn::GetAtt": []any{"NotificationBus", "Arn"}}
var ruleArn = object{"Fn::GetAtt": []any{"NotifyCounselRule", "Arn"}}

// iamStatements returns every statement of every identity policy in the
// template, by where it is: each AWS::IAM::Role's inline policies, each
// AWS::IAM::Policy and AWS::IAM::ManagedPolicy, each SAM function's Policies.
// A conditional statement (!If [cond, statement, AWS::NoValue]) counts as its
// statement: it is granted under some parameters.
func iamStatements(raw object) map[string][]object {
	out := map[string][]object{}
	add := func(where string, doc any) {
		for _, s := range list(get(doc, "Statement")) {
			if ifv := get(s, "Fn::If"); ifv != nil {
				for _, branch := range list(ifv)[1:] {
					if m, ok := branch.(object); ok && refOf(m) != "AWS::NoValue" {
						out[where] = append(out[where], m)
					}
				}
				continue
			}
			if m, ok := s.(object); ok {
				out[where] = append(out[where], m)
			}
		}
	}
	for id, r := range resourcesOf(raw) {
		switch str(r["Type"]) {
		case "AWS::IAM::Role":
			for _, pol := range list(get(r, "Properties", "Policies")) {
				add(id, get(pol, "PolicyDocument"))
			}
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy":
			add(id, get(r, "Properties", "PolicyDocument"))
		case "AWS::Serverless::Function":
			for _, pol := range list(get(r, "Properties", "Policies")) {
				if m, ok := pol.(object); ok {
					if _, isDoc := m["Statement"]; isDoc {
						add(id, m)
						continue
					}
				}
				// A SAM policy template or managed policy name: it may
				// grant anything, EventBridgePutEventsPolicy among them.
				out[id] = append(out[id], object{"Effect": "Allow", "Action": []any{"sam-policy"}, "Resource": pol})
			}
		}
	}
	return out
}

// TestNotificationPublishers: only stream-reduce's and the sweeper's roles
// may events:PutEvents, and only on NotificationBus (the bus their
// EVENT_BUS_NAME names); no role, policy or function anywhere in the template
// holds any other events: action or a SAM policy that could grant one.
func TestNotificationPublishers(t *testing.T) {
	raw := rawTemplate(t)
	mustResource(t, raw, "NotificationBus", "AWS::Events::EventBus")
	if name := get(raw, "Resources", "NotificationBus", "Properties", "Name"); !strings.Contains(str(get(name, "Fn::Sub")), "${AWS::StackName}") {
		t.Errorf("NotificationBus: Name %v, want a name derived from the stack's (two stacks in one account must not share a bus)", name)
	}
	if pols := ofType(raw, "AWS::Events::EventBusPolicy"); len(pols) > 0 {
		t.Errorf("the template opens the bus to other principals (%v): only this account's roles publish, by IAM", keys(pols))
	}
	publisherRoles := map[string]string{} // role -> function
	for _, fnID := range notifyPublishers {
		role, _, _ := getAtt(get(resourcesOf(raw)[fnID], "Properties", "Role"))
		publisherRoles[role] = fnID
	}
	granted := map[string]bool{}
	for where, stmts := range iamStatements(raw) {
		for _, st := range stmts {
			if str(st["Effect"]) != "Allow" {
				continue
			}
			for _, a := range list(st["Action"]) {
				la := strings.ToLower(str(a))
				if la == "sam-policy" {
					t.Errorf("%s: SAM policy %v; write the statements out (a SAM policy may grant events:PutEvents on any bus)", where, st["Resource"])
					continue
				}
				if !strings.HasPrefix(la, "events:") && la != "*" {
					continue
				}
				switch {
				case publisherRoles[where] == "":
					t.Errorf("%s: grants %s; only %v publish notifications", where, a, notifyPublishers)
				case la != "events:putevents":
					t.Errorf("%s: grants %s; a publisher needs events:PutEvents and nothing more", where, a)
				case !reflect.DeepEqual(list(st["Resource"]), []any{busArn}) || st["Condition"] != nil:
					t.Errorf("%s: events:PutEvents on %v, want exactly !GetAtt NotificationBus.Arn", where, st["Resource"])
				default:
					granted[publisherRoles[where]] = true
				}
			}
		}
	}
	for _, fnID := range notifyPublishers {
		if !granted[fnID] {
			t.Errorf("%s may not events:PutEvents on NotificationBus, but it publishes notifications", fnID)
		}
	}

	// The bus granted is the bus each publisher is told, and only they
	// are told of one; config agrees on who reads it.
	for fnID, pkg := range functionPackages {
		vars := get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables")
		publishes := slices.Contains(notifyPublishers, fnID)
		if publishes != slices.Contains(config.FunctionVars[pkg], "EVENT_BUS_NAME") {
			t.Errorf("%s: publishes notifications %v, but config.FunctionVars[%q] says otherwise", fnID, publishes, pkg)
		}
		bus, desk := get(vars, "EVENT_BUS_NAME"), get(vars, "DESK_URL")
		switch {
		case publishes && refOf(bus) != "NotificationBus":
			t.Errorf("%s: EVENT_BUS_NAME is %v, want !Ref NotificationBus (the bus its role may publish to)", fnID, bus)
		case !publishes && (bus != nil || desk != nil):
			t.Errorf("%s: EVENT_BUS_NAME %v, DESK_URL %v; it publishes no notification", fnID, bus, desk)
		}
	}
}

// TestNotificationDeskLink: DESK_URL is the desk the runs function serves,
// <ApiUrl>/desk (the stage's path included), and it loads.
func TestNotificationDeskLink(t *testing.T) {
	raw := rawTemplate(t)
	apiURL := str(get(raw, "Outputs", "ApiUrl", "Value", "Fn::Sub"))
	if apiURL == "" {
		t.Fatal("no ApiUrl output (!Sub)")
	}
	for _, fnID := range notifyPublishers {
		desk := get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables", "DESK_URL")
		if got := str(get(desk, "Fn::Sub")); got != apiURL+"/desk" {
			t.Errorf("%s: DESK_URL is %v, want !Sub %s/desk (the desk's page, GET /desk on the API's stage)", fnID, desk, apiURL)
		}
	}
}

// TestNotifyCounselRule: the rule listens on the stack's bus for source
// io.warrant and exactly warrant.pending, warrant.expiring and
// effect.outcome_unknown; it has one target, the topic, whose message is made
// of notify.Event's fields only (never a field that could hold an input, a
// prompt, output or an error: Event has none), with a retry policy that ends
// within the hour and a dead-letter queue.
func TestNotifyCounselRule(t *testing.T) {
	raw := rawTemplate(t)
	rule := mustResource(t, raw, "NotifyCounselRule", "AWS::Events::Rule")
	if rules := ofType(raw, "AWS::Events::Rule"); len(rules) != 1 {
		t.Errorf("rules %v, want NotifyCounselRule alone", keys(rules))
	}
	p, _ := rule["Properties"].(object)
	if refOf(p["EventBusName"]) != "NotificationBus" {
		t.Errorf("NotifyCounselRule: EventBusName %v, want !Ref NotificationBus (the default bus never sees the events)", p["EventBusName"])
	}
	if s := str(p["State"]); s != "" && s != "ENABLED" {
		t.Errorf("NotifyCounselRule: State %s", s)
	}
	pattern, _ := p["EventPattern"].(object)
	if got := list(pattern["source"]); !reflect.DeepEqual(got, []any{notify.Source}) {
		t.Errorf("NotifyCounselRule: source %v, want [%s]", got, notify.Source)
	}
	var types []string
	for _, d := range list(pattern["detail-type"]) {
		types = append(types, str(d))
	}
	slices.Sort(types)
	want := slices.Sorted(slices.Values(counselTypes))
	if !slices.Equal(types, want) {
		t.Errorf("NotifyCounselRule: detail-type %v, want exactly %v", types, want)
	}
	for _, typ := range types {
		if !slices.Contains(notify.Types, typ) {
			t.Errorf("NotifyCounselRule: %s is no event type pkg/notify publishes (%v)", typ, notify.Types)
		}
	}
	if extra := slices.DeleteFunc(keys(pattern), func(k string) bool { return k == "source" || k == "detail-type" }); len(extra) > 0 {
		t.Errorf("NotifyCounselRule: the pattern also filters on %v; counsel get every one of the three", extra)
	}

	targets := list(p["Targets"])
	if len(targets) != 1 {
		t.Fatalf("NotifyCounselRule: targets %v, want the notification topic alone", targets)
	}
	tg := targets[0]
	if refOf(get(tg, "Arn")) != "NotificationTopic" {
		t.Errorf("NotifyCounselRule: target %v, want !Ref NotificationTopic", get(tg, "Arn"))
	}
	if get(tg, "RoleArn") != nil || get(tg, "Input") != nil || get(tg, "InputPath") != nil {
		t.Errorf("NotifyCounselRule: the target sets RoleArn, Input or InputPath; EventBridge publishes by the topic policy, the message by InputTransformer")
	}
	if dlq, attr, _ := getAtt(get(tg, "DeadLetterConfig", "Arn")); dlq != "NotificationDeadLetterQueue" || attr != "Arn" {
		t.Errorf("NotifyCounselRule: DeadLetterConfig %v, want !GetAtt NotificationDeadLetterQueue.Arn", get(tg, "DeadLetterConfig"))
	}
	age, okAge := intOf(get(tg, "RetryPolicy", "MaximumEventAgeInSeconds"))
	tries, okTries := intOf(get(tg, "RetryPolicy", "MaximumRetryAttempts"))
	if !okAge || !okTries || age < 60 || age > 3600 || tries < 1 || tries > 185 {
		t.Errorf("NotifyCounselRule: RetryPolicy %v; want retries (1 to 185) within an hour (60 to 3600 s): warrant.expiring is stale an hour on", get(tg, "RetryPolicy"))
	}

	// The message: every placeholder a path of the map, every path (under
	// either NotificationEmailNames) the detail-type or a field of the
	// event's escaped text (notify.Escaped: EventBridge puts values into a
	// template's string unescaped), and the template a JSON string (a string
	// template for SNS's e-mail) with no quote, < or > of its own.
	fields := map[string]bool{}
	et := reflect.TypeFor[notify.Escaped]()
	for i := range et.NumField() {
		name, _, _ := strings.Cut(et.Field(i).Tag.Get("json"), ",")
		fields[name] = true
	}
	paths, _ := get(tg, "InputTransformer", "InputPathsMap").(object)
	for _, choice := range emailChoices(t, raw) {
		resolved, _ := counselTransformer(t, raw, map[string]string{"NotificationEmailNames": choice})
		for name, path := range resolved {
			field, isEscaped := strings.CutPrefix(path, "$.detail.escaped.")
			if path != "$.detail-type" && (!isEscaped || !fields[field]) {
				t.Errorf("NotifyCounselRule (%s): input path %s = %v is neither $.detail-type nor $.detail.escaped.<a field of notify.Escaped>", choice, name, path)
			}
		}
		need := []string{"$.detail-type", "$.detail.escaped.tool_name", "$.detail.escaped.risk_tier", "$.detail.escaped.desk_url",
			"$.detail.escaped.matter_id", "$.detail.escaped.requester_id"}
		if choice == "names" {
			need[4], need[5] = "$.detail.escaped.matter", "$.detail.escaped.requester"
		}
		for _, p := range need {
			if !slices.ContainsFunc(keys(paths), func(k string) bool { return resolved[k] == p }) {
				t.Errorf("NotifyCounselRule (%s): the message lacks %s", choice, p)
			}
		}
	}
	tmpl := str(get(tg, "InputTransformer", "InputTemplate"))
	placeholder := regexp.MustCompile(`<([^<>]*)>`)
	for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
		if _, ok := paths[m[1]]; !ok {
			t.Errorf("NotifyCounselRule: the template's <%s> is in no InputPathsMap entry", m[1])
		}
	}
	var text string
	if err := json.Unmarshal([]byte(tmpl), &text); err != nil {
		t.Errorf("NotifyCounselRule: InputTemplate %q is not one JSON string: %v", tmpl, err)
	}
	if rest := placeholder.ReplaceAllString(text, ""); strings.ContainsAny(rest, `"<>`) {
		t.Errorf("NotifyCounselRule: InputTemplate has a quote, < or > of its own: %q", rest)
	}
}

// TestNotificationTopic: the topic is encrypted with the firm's key
// (EventBridge cannot publish to one encrypted with alias/aws/sns), whose
// policy (when the stack creates it) lets EventBridge use it for this topic
// and the rule's dead-letter queue only, each statement held to its
// resource by the encryption context; the topic's policy lets EventBridge
// publish for NotifyCounselRule only, and the rule's dead-letter queue takes
// messages from that rule only. TestDataKeyPolicy evaluates the key's
// statements; docs/DEPLOY.md gives the same two for a key of the firm's own.
func TestNotificationTopic(t *testing.T) {
	raw := rawTemplate(t)
	topic := mustResource(t, raw, "NotificationTopic", "AWS::SNS::Topic")
	tp, _ := topic["Properties"].(object)
	if !reflect.DeepEqual(tp["KmsMasterKeyId"], dataKeyInUse) {
		t.Errorf("NotificationTopic: KmsMasterKeyId %v, want the firm's key %v (EventBridge cannot use alias/aws/sns)", tp["KmsMasterKeyId"], dataKeyInUse)
	}
	key := mustResource(t, raw, "DataKey", "AWS::KMS::Key")
	stack := map[string]string{"AWS::StackName": "warrant-prod"}
	topicArn := "arn:aws:sns:us-east-1:123456789012:" + str(evalIntrinsic(t, raw, tp["TopicName"], stack))
	dlqArn := "arn:aws:sqs:us-east-1:123456789012:" + str(evalIntrinsic(t, raw, get(resourcesOf(raw)["NotificationDeadLetterQueue"], "Properties", "QueueName"), stack))
	// The context key each EventBridge statement is held by, the value it
	// must name and the actions it may take.
	want := map[string]struct {
		arn     string
		actions []any
	}{
		"kms:EncryptionContext:aws:sns:topicArn": {topicArn, []any{"kms:Decrypt", "kms:GenerateDataKey*"}},
		"kms:EncryptionContext:aws:sqs:arn":      {dlqArn, []any{"kms:Decrypt", "kms:GenerateDataKey"}},
	}
	seen := map[string]int{}
	for _, st := range list(get(key, "Properties", "KeyPolicy", "Statement")) {
		if str(get(st, "Principal", "Service")) != "events.amazonaws.com" {
			continue
		}
		cond, _ := get(st, "Condition").(object)
		equals, _ := get(cond, "StringEquals").(object)
		if len(cond) != 1 || len(equals) != 1 {
			t.Errorf("DataKey: EventBridge's statement %v has condition %v; want StringEquals on one encryption context key alone (SNS refuses aws:SourceArn/aws:SourceAccount in the key policy for EventBridge)", get(st, "Sid"), cond)
			continue
		}
		for ctxKey, v := range equals {
			w, ok := want[ctxKey]
			if !ok {
				t.Errorf("DataKey: EventBridge's statement %v is held by %s; want the topic's or the dead-letter queue's context", get(st, "Sid"), ctxKey)
				continue
			}
			seen[ctxKey]++
			if got := evalIntrinsic(t, raw, v, stack); got != w.arn {
				t.Errorf("DataKey: EventBridge's statement %v names %v, want %s", get(st, "Sid"), got, w.arn)
			}
			actions := list(get(st, "Action"))
			slices.SortFunc(actions, func(a, b any) int { return strings.Compare(str(a), str(b)) })
			if !reflect.DeepEqual(actions, w.actions) {
				t.Errorf("DataKey: EventBridge may %v under %s; want %v only", actions, ctxKey, w.actions)
			}
		}
	}
	for ctxKey := range want {
		if seen[ctxKey] != 1 {
			t.Errorf("DataKey: %d statements let EventBridge use the key under %s, want one", seen[ctxKey], ctxKey)
		}
	}

	// Resource policies that let EventBridge in: each for the rule alone.
	for _, c := range []struct{ typ, attach, resource, action string }{
		{"AWS::SNS::TopicPolicy", "Topics", "NotificationTopic", "sns:Publish"},
		{"AWS::SQS::QueuePolicy", "Queues", "NotificationDeadLetterQueue", "sqs:SendMessage"},
	} {
		var allows int
		for id, pol := range ofType(raw, c.typ) {
			p, _ := pol["Properties"].(object)
			applies := slices.ContainsFunc(list(p[c.attach]), func(v any) bool { return refOf(v) == c.resource })
			for _, st := range list(get(p, "PolicyDocument", "Statement")) {
				if str(get(st, "Effect")) != "Allow" {
					continue
				}
				if !applies || str(get(st, "Principal", "Service")) != "events.amazonaws.com" {
					if applies {
						t.Errorf("%s: lets %v into %s; only EventBridge, for NotifyCounselRule", id, get(st, "Principal"), c.resource)
					}
					continue
				}
				allows++
				if !reflect.DeepEqual(list(get(st, "Action")), []any{c.action}) {
					t.Errorf("%s: EventBridge may %v on %s, want %s only", id, get(st, "Action"), c.resource, c.action)
				}
				cond, _ := get(st, "Condition").(object)
				if len(cond) != 1 || !reflect.DeepEqual(get(cond, "ArnEquals"), object{"aws:SourceArn": ruleArn}) {
					t.Errorf("%s: EventBridge's statement on %s has condition %v; want ArnEquals aws:SourceArn = !GetAtt NotifyCounselRule.Arn alone", id, c.resource, cond)
				}
			}
		}
		if allows != 1 {
			t.Errorf("%d statements let EventBridge into %s, want one (for NotifyCounselRule)", allows, c.resource)
		}
	}
}

// TestNotificationEmailSubscription: NotificationEmail is empty by default
// and takes an e-mail address or nothing; the topic's one subscription is
// that address, made only under HasNotificationEmail (an address set); the
// outputs name the bus and the topic.
func TestNotificationEmailSubscription(t *testing.T) {
	raw := rawTemplate(t)
	param, _ := get(raw, "Parameters", "NotificationEmail").(object)
	if param == nil || param["Type"] != "String" || param["Default"] != "" {
		t.Fatalf("parameter NotificationEmail: %v; want a String, empty by default", param)
	}
	pattern := regexp.MustCompile(str(param["AllowedPattern"]))
	for v, ok := range map[string]bool{"": true, "counsel-desk@firm.example": true, "a.b+warrants@firm.co.uk": true,
		"counsel-desk": false, "counsel desk@firm.example": false, "a@b@firm.example": false, "counsel@firm": false} {
		if pattern.MatchString(v) != ok {
			t.Errorf("NotificationEmail's AllowedPattern takes %q: %v, want %v", v, !ok, ok)
		}
	}
	if c := get(raw, "Conditions", "HasNotificationEmail"); !reflect.DeepEqual(c,
		object{"Fn::Not": []any{object{"Fn::Equals": []any{object{"Ref": "NotificationEmail"}, ""}}}}) {
		t.Errorf("HasNotificationEmail is %v, want !Not [!Equals [!Ref NotificationEmail, \"\"]]", c)
	}
	var subs []string
	for id, s := range ofType(raw, "AWS::SNS::Subscription") {
		if refOf(get(s, "Properties", "TopicArn")) != "NotificationTopic" {
			continue
		}
		subs = append(subs, id)
		if s["Condition"] != "HasNotificationEmail" {
			t.Errorf("%s subscribes the notification topic under condition %v, want HasNotificationEmail (no address, no subscription)", id, s["Condition"])
		}
		if get(s, "Properties", "Protocol") != "email" || refOf(get(s, "Properties", "Endpoint")) != "NotificationEmail" {
			t.Errorf("%s: Protocol %v, Endpoint %v; want email to !Ref NotificationEmail", id, get(s, "Properties", "Protocol"), get(s, "Properties", "Endpoint"))
		}
	}
	if len(subs) != 1 {
		t.Errorf("subscriptions of the notification topic %v, want NotificationEmailSubscription alone", subs)
	}
	if got := get(raw, "Outputs", "NotificationBusName", "Value"); refOf(got) != "NotificationBus" {
		t.Errorf("output NotificationBusName is %v, want !Ref NotificationBus", got)
	}
	if got := get(raw, "Outputs", "NotificationTopicArn", "Value"); refOf(got) != "NotificationTopic" {
		t.Errorf("output NotificationTopicArn is %v, want !Ref NotificationTopic", got)
	}
}

var (
	docRow   = regexp.MustCompile("(?m)^\\| ((?:`[a-z._]+`(?:, )?)+) \\|[^\\n]*\\| (yes|no) \\|$")
	docCode  = regexp.MustCompile("`([a-z._]+)`")
	textCode = regexp.MustCompile("(?s)\n```text\n(.*?)\n```")
)

// TestNotificationsDoc: DEPLOY.md's "Notifications" lists every event type
// pkg/notify publishes, once, with "yes" exactly for those NotifyCounselRule
// sends counsel, and its sample message is what the rule's template makes.
func TestNotificationsDoc(t *testing.T) {
	text := section(t, deployDoc, "Notifications")
	raw := rawTemplate(t)
	var ruleTypes []string
	for _, d := range list(get(raw, "Resources", "NotifyCounselRule", "Properties", "EventPattern", "detail-type")) {
		ruleTypes = append(ruleTypes, str(d))
	}
	seen := map[string]int{}
	for _, m := range docRow.FindAllStringSubmatch(text, -1) {
		for _, c := range docCode.FindAllStringSubmatch(m[1], -1) {
			typ := c[1]
			seen[typ]++
			if !slices.Contains(notify.Types, typ) {
				t.Errorf("\"Notifications\" lists %s, which pkg/notify does not publish", typ)
			}
			if (m[2] == "yes") != slices.Contains(ruleTypes, typ) {
				t.Errorf("\"Notifications\" says %s goes to counsel: %s; NotifyCounselRule matches %v", typ, m[2], ruleTypes)
			}
		}
	}
	for _, typ := range notify.Types {
		if seen[typ] != 1 {
			t.Errorf("\"Notifications\" lists %s %d times, want once", typ, seen[typ])
		}
	}

	targets := list(get(raw, "Resources", "NotifyCounselRule", "Properties", "Targets"))
	if len(targets) == 0 {
		t.Fatal("NotifyCounselRule has no target")
	}
	tmpl := str(get(targets[0], "InputTransformer", "InputTemplate"))
	var pattern strings.Builder
	for i, part := range regexp.MustCompile(`<[^<>]*>`).Split(tmpl, -1) {
		if i > 0 {
			pattern.WriteString(`[^;]*?`)
		}
		pattern.WriteString(regexp.QuoteMeta(part))
	}
	sample := textCode.FindStringSubmatch(text)
	if sample == nil {
		t.Fatal("\"Notifications\" has no ```text sample message")
	}
	if !regexp.MustCompile("^" + pattern.String() + "$").MatchString(sample[1]) {
		t.Errorf("\"Notifications\"'s sample message\n  %s\nis not what NotifyCounselRule's template makes:\n  %s", sample[1], tmpl)
	}
}
