package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

type statement struct {
	sid       string
	effect    string
	actions   []string
	resources []any
	// when is the template condition a conditional statement is given
	// under ("" for a statement always given); conditions is its IAM
	// Condition block.
	when       string
	conditions any
}

// grant is one (action, resource) pair, the resource written canonically:
// "Table.Arn" for !GetAtt Table.Arn, "sub:..." for !Sub, "if:<Condition>" for
// !If, "ref:<Parameter>" for !Ref, "*" for a literal star; when is the
// template condition the statement is given under ("" for always).
type grant struct{ action, resource, when string }

func resourceKey(v any) string {
	if id, attr, ok := getAtt(v); ok {
		return id + "." + attr
	}
	switch {
	case get(v, "Fn::Sub") != nil:
		return "sub:" + str(list(get(v, "Fn::Sub"))[0])
	case get(v, "Fn::If") != nil:
		return "if:" + str(list(get(v, "Fn::If"))[0])
	case refOf(v) != "":
		return "ref:" + refOf(v)
	}
	return fmt.Sprint(v)
}

// roleStatements returns the policy statements of fn's execution role, which
// must be an explicit AWS::IAM::Role of the template: a SAM-generated role
// carries AWS managed policies with Resource "*" that no statement here shows.
func roleStatements(t *testing.T, raw object, fnID string) (string, []statement) {
	t.Helper()
	fn := mustResource(t, raw, fnID, "AWS::Serverless::Function")
	p, _ := fn["Properties"].(object)
	if _, ok := p["Policies"]; ok {
		t.Errorf("%s: uses SAM Policies; give it an explicit Role with explicit statements", fnID)
	}
	roleID, attr, ok := getAtt(p["Role"])
	if !ok || attr != "Arn" {
		t.Fatalf("%s: Role must be !GetAtt <AWS::IAM::Role>.Arn, got %v", fnID, p["Role"])
	}
	return roleID, policyStatements(t, raw, roleID)
}

// policyStatements returns the statements of the inline policies of the
// template's role roleID.
func policyStatements(t *testing.T, raw object, roleID string) []statement {
	t.Helper()
	role := mustResource(t, raw, roleID, "AWS::IAM::Role")
	rp, _ := role["Properties"].(object)
	if len(list(rp["ManagedPolicyArns"])) > 0 {
		t.Errorf("%s: ManagedPolicyArns %v: write the statements out", roleID, rp["ManagedPolicyArns"])
	}
	if trust := fmt.Sprint(get(rp, "AssumeRolePolicyDocument")); !strings.Contains(trust, "lambda.amazonaws.com") {
		t.Errorf("%s: must be assumable by lambda.amazonaws.com only, got %s", roleID, trust)
	}
	var out []statement
	for _, pol := range list(rp["Policies"]) {
		for _, s := range list(get(pol, "PolicyDocument", "Statement")) {
			when := ""
			if ifv := get(s, "Fn::If"); ifv != nil {
				// A conditional statement: the grant it may give is its
				// true branch (the false one is AWS::NoValue).
				b := list(ifv)
				if refOf(b[2]) != "AWS::NoValue" {
					t.Errorf("%s: a conditional statement's false branch must be AWS::NoValue", roleID)
				}
				s, when = b[1], str(b[0])
			}
			sm, _ := s.(object)
			for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
				if _, ok := sm[k]; ok {
					t.Errorf("%s: statement uses %s", roleID, k)
				}
			}
			st := statement{sid: str(sm["Sid"]), effect: str(sm["Effect"]), resources: list(sm["Resource"]), when: when, conditions: sm["Condition"]}
			for _, a := range list(sm["Action"]) {
				st.actions = append(st.actions, str(a))
			}
			out = append(out, st)
		}
	}
	return out
}

func TestIAMLeastPrivilege(t *testing.T) {
	raw := rawTemplate(t)
	logGroup := func(fnID string) string {
		return refOf(get(resourcesOf(raw)[fnID], "Properties", "LoggingConfig", "LogGroup")) + ".Arn"
	}
	logs := func(fnID string) []grant {
		return []grant{{"logs:CreateLogStream", logGroup(fnID), ""}, {"logs:PutLogEvents", logGroup(fnID), ""}}
	}
	on := func(resource string, actions ...string) []grant {
		var g []grant
		for _, a := range actions {
			g = append(g, grant{a, resource, ""})
		}
		return g
	}
	// onlyIf is a grant given only under a template condition.
	onlyIf := func(cond string, g []grant) []grant {
		out := slices.Clone(g)
		for i := range out {
			out[i].when = cond
		}
		return out
	}
	model := "if:ModelIsInferenceProfile"
	// Writers sign the ledger head they move; readers only verify it.
	sign, verify := on("LedgerKey.Arn", "kms:GenerateMac", "kms:VerifyMac"), on("LedgerKey.Arn", "kms:VerifyMac")
	// The run writers: every append is a conditional transaction on the table.
	runItems := on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")
	// Firm budget reservations are deleted when settled or released: by the
	// worker (its calls) and the sweeper (lost workers'), nobody else.
	reservations := on("Table.Arn", "dynamodb:DeleteItem")
	// The functions that hand a run to the worker.
	enqueue := on("WorkerQueue.Arn", "sqs:SendMessage")
	// The functions that read a document from SSM (config.FunctionVars:
	// the risk policy for resume, the worker and approve; the tool catalog
	// and the agents for those and invoke and the sweeper) may read its
	// parameter, and only when the stack names one.
	param := func(cond, name string) []grant {
		return onlyIf(cond, on("sub:arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${"+name+"}", "ssm:GetParameter"))
	}
	toolPolicy := param("HasToolPolicy", "ToolPolicyParameter")
	documents := slices.Concat(param("HasToolCatalog", "ToolCatalogParameter"), param("HasAgents", "AgentsParameter"))
	// Only the worker calls tools: it alone may read their servers'
	// credentials, exactly the secrets the stack names, and decrypt them
	// with their customer-managed key when there is one
	// (TestToolSecretsGrant checks the key's conditions).
	secrets := slices.Concat(onlyIf("HasToolSecrets", on("ref:ToolSecretArns", "secretsmanager:GetSecretValue")),
		onlyIf("HasToolSecretsKey", on("ref:ToolSecretsKeyArn", "kms:Decrypt")))
	// And it alone may invoke the firm's functions the catalog names as
	// tools, exactly those the stack names (TestToolFunctionsGrant).
	functions := onlyIf("HasToolFunctions", on("ref:ToolFunctionArns", "lambda:InvokeFunction"))
	// In the firm's VPC (only the worker joins it: TestWorkerVpc), Lambda
	// manages the worker's network interfaces with its role: the actions
	// Lambda's guide lists, the Describe ones on "*" (they take no
	// resource-level permission), the others on this account's and Region's
	// EC2 resources.
	vpc := slices.Concat(
		onlyIf("HasWorkerVpc", on("sub:arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:*/*",
			"ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses")),
		onlyIf("HasWorkerVpc", on("*", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets")))
	// Evidence (issue 20): the receipt key in use, the stack's ReceiptKey or
	// the one ReceiptKeyArn names (!If [CreateReceiptKey, ...]: its branches
	// are TestReceiptKeyGrants'). Stream-reduce signs receipts and the
	// sweeper checkpoints; both and runs (GET /v1/keys, the evidence routes)
	// read its public half, and those of the retired keys when the stack
	// names any. Only the sweeper writes a checkpoint, new objects under
	// checkpoints/ of the Object Lock bucket, and reads them back (issue
	// 25 C: it signs only a log that extends the last one kept there).
	receiptSign := on("if:CreateReceiptKey", "kms:Sign")
	receiptKeys := slices.Concat(on("if:CreateReceiptKey", "kms:GetPublicKey"),
		onlyIf("HasRetiredReceiptKeys", on("sub:arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*", "kms:GetPublicKey")))
	checkpoints := slices.Concat(on("sub:${CheckpointBucket.Arn}/checkpoints/*", "s3:PutObject", "s3:GetObject"),
		on("CheckpointBucket.Arn", "s3:ListBucket"))
	receiptSigners := []string{"StreamReduceFunction", "SweeperFunction"}
	// Notifications (issue 21): stream-reduce and the sweeper publish to the
	// stack's bus, and nowhere else (TestNotificationPublishers).
	publish := on("NotificationBus.Arn", "events:PutEvents")
	// The firm's key (issue 26 item 1), one key whose uses the conditions
	// keep apart (TestDataKeyGrants checks each condition exactly): a
	// grant on it is written "if:CreateDataKey <use>", the use being
	// "content" (Warrant's encryption context, called directly) or "via
	// <service> <resource>" (kms:ViaService and that resource's encryption
	// context). Every role touches the table, so every role may Decrypt
	// through DynamoDB for it; the senders to an encrypted queue may
	// GenerateDataKey and Decrypt through SQS for it (the worker receives
	// too), the sweeper through S3 for the checkpoint bucket. Content: invoke
	// alone generates a run's data key; the functions that read or write
	// content open it; stream-reduce and the sweeper have no content use.
	viaTable := on("if:CreateDataKey via dynamodb Table", "kms:Decrypt")
	viaWorkerQueue := on("if:CreateDataKey via sqs WorkerQueue", "kms:GenerateDataKey", "kms:Decrypt")
	openRunKeys := on("if:CreateDataKey content", "kms:Decrypt")
	makeRunKeys := on("if:CreateDataKey content", "kms:GenerateDataKey", "kms:Decrypt")
	// The only grants on "*": actions that take no resource-level permission.
	starOnly := map[string]bool{"ec2:DescribeNetworkInterfaces": true, "ec2:DescribeSubnets": true}
	want := map[string][]grant{
		"InvokeFunction": slices.Concat(logs("InvokeFunction"), runItems, enqueue, sign, documents, viaTable, viaWorkerQueue, makeRunKeys),
		"ResumeFunction": slices.Concat(logs("ResumeFunction"), runItems, enqueue, sign, toolPolicy, documents, viaTable, viaWorkerQueue, openRunKeys),
		// The worker runs the brain: the only function that calls the model.
		// Its queue permissions are what Lambda's SQS event source mapping
		// uses on its behalf, and the hand-over of a run to a new
		// invocation.
		"WorkerFunction": slices.Concat(logs("WorkerFunction"), runItems, reservations,
			on("WorkerQueue.Arn", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"),
			enqueue,
			on(model, "bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"), sign, toolPolicy, documents, secrets, functions, vpc,
			viaTable, viaWorkerQueue, openRunKeys),
		// The sweeper's retention pass and destruction orders, like
		// approve's holds and destructions, read a matter's runs by GSI1.
		"SweeperFunction": slices.Concat(logs("SweeperFunction"), runItems, reservations,
			on("sub:${Table.Arn}/index/GSI2", "dynamodb:Query"), on("sub:${Table.Arn}/index/GSI1", "dynamodb:Query"), enqueue, sign, documents, receiptSign, receiptKeys, checkpoints, publish,
			viaTable, viaWorkerQueue, on("if:CreateDataKey via s3 CheckpointBucket", "kms:GenerateDataKey", "kms:Decrypt")),
		"ApproveFunction": slices.Concat(logs("ApproveFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem",
				"dynamodb:DeleteItem"), on("sub:${Table.Arn}/index/GSI1", "dynamodb:Query"), sign, toolPolicy, documents,
			viaTable, openRunKeys),
		"RunsFunction": slices.Concat(logs("RunsFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query"),
			on("sub:${Table.Arn}/index/GSI1", "dynamodb:Query"), verify, receiptKeys, viaTable, openRunKeys),
		// Stream-reduce updates projections and stores receipts (a
		// transaction of Puts: dynamodb:PutItem, found missing by
		// pkg/handlers' TestRolesCoverCalls); it deletes nothing and checks
		// no other item's condition.
		"StreamReduceFunction": slices.Concat(logs("StreamReduceFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:PutItem"),
			on("Table.StreamArn", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
			on("StreamDeadLetterQueue.Arn", "sqs:SendMessage"), verify, receiptSign, receiptKeys, publish,
			viaTable, on("if:CreateDataKey via sqs StreamDeadLetterQueue", "kms:GenerateDataKey", "kms:Decrypt")),
	}
	// Who may touch which queue at all (beyond the exact grants above):
	// the worker queue is the run hand-over, the stream's dead-letter queue
	// the reducer's; nobody reads a dead-letter queue but an operator.
	queueUsers := map[string][]string{
		"WorkerQueue.Arn":           {"InvokeFunction", "ResumeFunction", "WorkerFunction", "SweeperFunction"},
		"StreamDeadLetterQueue.Arn": {"StreamReduceFunction"},
	}
	readOnly := []string{"dynamodb:GetItem", "dynamodb:Query"}

	for _, fnID := range keys(functionPackages) {
		roleID, stmts := roleStatements(t, raw, fnID)
		var got []grant
		for _, st := range stmts {
			if st.effect != "Allow" {
				continue
			}
			for _, a := range st.actions {
				la := strings.ToLower(a)
				isDynamo := strings.HasPrefix(la, "dynamodb:")
				if strings.Contains(a, "*") {
					t.Errorf("%s (%s): wildcard action %q", fnID, roleID, a)
				}
				if la == "dynamodb:scan" {
					t.Errorf("%s (%s): grants dynamodb:Scan; every read is keyed", fnID, roleID)
				}
				if fnID != "WorkerFunction" && strings.HasPrefix(la, "bedrock:") {
					t.Errorf("%s (%s): grants %s; only the worker calls the model (requests answer 202 and hand the run over)", fnID, roleID, a)
				}
				if fnID != "WorkerFunction" && strings.HasPrefix(la, "secretsmanager:") {
					t.Errorf("%s (%s): grants %s; only the worker calls tools, so only it reads their credentials", fnID, roleID, a)
				}
				if fnID != "WorkerFunction" && strings.HasPrefix(la, "lambda:") {
					t.Errorf("%s (%s): grants %s; only the worker calls tools, so only it invokes the firm's functions", fnID, roleID, a)
				}
				if fnID != "WorkerFunction" && strings.HasPrefix(la, "ec2:") {
					t.Errorf("%s (%s): grants %s; only the worker joins the firm's VPC", fnID, roleID, a)
				}
				if (fnID == "RunsFunction" || fnID == "StreamReduceFunction") && la == "kms:generatemac" {
					t.Errorf("%s (%s): grants %s; only the functions that append lines sign ledger heads", fnID, roleID, a)
				}
				if la == "kms:sign" && !slices.Contains(receiptSigners, fnID) {
					t.Errorf("%s (%s): grants %s; only stream-reduce (receipts) and the sweeper (checkpoints) sign with the receipt key", fnID, roleID, a)
				}
				if strings.HasPrefix(la, "s3:") && fnID != "SweeperFunction" {
					t.Errorf("%s (%s): grants %s; only the sweeper writes the checkpoint bucket", fnID, roleID, a)
				}
				if strings.HasPrefix(la, "s3:") && la != "s3:putobject" && la != "s3:getobject" && la != "s3:listbucket" {
					t.Errorf("%s (%s): grants %s; the checkpoint bucket is written once and read back (s3:PutObject, s3:GetObject, s3:ListBucket), never deleted or re-locked by a function", fnID, roleID, a)
				}
				if la == "s3:listbucket" && fmt.Sprint(st.conditions) != "map[StringLike:map[s3:prefix:checkpoints/*]]" {
					t.Errorf("%s (%s): s3:ListBucket without the condition s3:prefix checkpoints/* (%v)", fnID, roleID, st.conditions)
				}
				if fnID == "RunsFunction" && isDynamo && !slices.Contains(readOnly, a) {
					t.Errorf("RunsFunction (%s): grants %s; it is read-only (%v)", roleID, a, readOnly)
				}
				for _, r := range st.resources {
					key := resourceKey(r)
					// Decrypt and data keys: on the firm's key in use (each
					// use told apart by its conditions), or, for the worker
					// alone, on the tool servers' secrets' key.
					if la == "kms:decrypt" || strings.HasPrefix(la, "kms:generatedatakey") || la == "kms:encrypt" || strings.HasPrefix(la, "kms:reencrypt") {
						switch {
						case key == "ref:ToolSecretsKeyArn" && la == "kms:decrypt":
							if fnID != "WorkerFunction" {
								t.Errorf("%s (%s): grants %s on the tool secrets' key; only the worker calls tools, so only it reads their credentials", fnID, roleID, a)
							}
						case key == "if:CreateDataKey" && (la == "kms:decrypt" || la == "kms:generatedatakey"):
							key += " " + dataKeyUse(st)
						default:
							t.Errorf("%s (%s): grants %s on %s, which is neither the firm's key in use (kms:Decrypt, kms:GenerateDataKey) nor, for the worker, its tools' secrets' key (kms:Decrypt)", fnID, roleID, a, key)
						}
					}
					if s, ok := r.(string); ok && strings.Contains(s, "*") && (isDynamo || s == "*" && !starOnly[a]) {
						t.Errorf("%s (%s): %s on wildcard resource %q", fnID, roleID, a, s)
					}
					if isDynamo && key != "Table.Arn" && key != "Table.StreamArn" && !strings.HasPrefix(key, "sub:${Table.Arn}/index/") {
						t.Errorf("%s (%s): %s on %s, which is not the table, its stream or one of its indexes", fnID, roleID, a, key)
					}
					if strings.HasPrefix(la, "s3:") && key != "sub:${CheckpointBucket.Arn}/checkpoints/*" && !(la == "s3:listbucket" && key == "CheckpointBucket.Arn") {
						t.Errorf("%s (%s): %s on %s; a function writes only checkpoints/ of CheckpointBucket", fnID, roleID, a, key)
					}
					if (la == "kms:sign" || la == "kms:getpublickey") && key != "if:CreateReceiptKey" && st.when != "HasRetiredReceiptKeys" {
						t.Errorf("%s (%s): %s on %s, which is not the receipt key in use (!If [CreateReceiptKey, ReceiptKey.Arn, ReceiptKeyArn])", fnID, roleID, a, key)
					}
					if strings.HasPrefix(la, "sqs:") {
						users, known := queueUsers[key]
						switch {
						case !known:
							t.Errorf("%s (%s): %s on %s, which is not a queue a function uses (a dead-letter queue is the operator's)", fnID, roleID, a, key)
						case !slices.Contains(users, fnID):
							t.Errorf("%s (%s): %s on %s, which only %v may touch", fnID, roleID, a, key, users)
						}
					}
					got = append(got, grant{a, key, st.when})
				}
			}
		}
		sortGrants := func(g []grant) []string {
			var s []string
			for _, x := range g {
				line := x.action + " on " + x.resource
				if x.when != "" {
					line += " if " + x.when
				}
				s = append(s, line)
			}
			sort.Strings(s)
			return slices.Compact(s)
		}
		if g, w := sortGrants(got), sortGrants(want[fnID]); !slices.Equal(g, w) {
			t.Errorf("%s (%s) grants\n  %s\nwant\n  %s", fnID, roleID, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
		}
	}

	// The dead-letter queue granted is the one the stream mapping sends to.
	dest, _, _ := getAtt(get(resourcesOf(raw)["StreamReduceFunction"], "Properties", "Events", "LedgerStream", "Properties", "DestinationConfig", "OnFailure", "Destination"))
	if dest != "StreamDeadLetterQueue" {
		t.Errorf("the stream mapping sends failures to %q, the role grants StreamDeadLetterQueue", dest)
	}
	// The queue granted is the one the worker's event reads and the senders'
	// QUEUE_URL names.
	if q, _, _ := getAtt(get(resourcesOf(raw)["WorkerFunction"], "Properties", "Events", "WorkerMessages", "Properties", "Queue")); q != "WorkerQueue" {
		t.Errorf("the worker's SQS event reads %q, the roles grant WorkerQueue", q)
	}
	for _, fnID := range []string{"InvokeFunction", "ResumeFunction", "WorkerFunction", "SweeperFunction"} {
		if q := refOf(get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables", "QUEUE_URL")); q != "WorkerQueue" {
			t.Errorf("%s: QUEUE_URL is !Ref %q, its role grants sqs:SendMessage on WorkerQueue", fnID, q)
		}
	}
	// The sweeper's index grant names the index pkg/dynamo queries.
	if idx := "sub:${Table.Arn}/index/" + dynamo.IndexGSI2; !slices.ContainsFunc(want["SweeperFunction"], func(g grant) bool { return g.resource == idx }) {
		t.Errorf("the sweeper's grants do not name %s", idx)
	}
}

// noValue is what !Ref AWS::NoValue evaluates to: the property is left out.
type noValue struct{}

// intrinsicOf reports whether m is an intrinsic function's long form
// ({"Ref": ...}, {"Condition": ...}, {"Fn::<name>": ...}), and its name.
func intrinsicOf(m object) (string, bool) {
	if len(m) != 1 {
		return "", false
	}
	for k := range m {
		return k, k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return "", false
}

// evalIntrinsic evaluates the few intrinsics the Bedrock grant, the document
// sources, the secrets and functions grants and the worker's VPC use, with the given parameters (a
// CommaDelimitedList's value written with commas) and fixed pseudo
// parameters: goformation resolves no Fn::If on a parameter it was not given,
// no GetAtt, and never reports the ARN a policy ends up with (limit 2).
func evalIntrinsic(t *testing.T, raw object, v any, params map[string]string) any {
	t.Helper()
	pseudo := map[string]string{"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
		"AWS::StackId": testStackID}
	lookup := func(name string) string {
		if v, ok := pseudo[name]; ok {
			return v
		}
		if v, ok := params[name]; ok {
			return v
		}
		if d := get(raw, "Parameters", name, "Default"); d != nil {
			return fmt.Sprint(d)
		}
		t.Fatalf("no value for %s", name)
		return ""
	}
	var eval func(v any) any
	cond := func(name string) bool {
		b, ok := eval(get(raw, "Conditions", name)).(bool)
		if !ok {
			t.Fatalf("condition %s does not evaluate to a bool", name)
		}
		return b
	}
	eval = func(v any) any {
		m, ok := v.(object)
		if s, isList := v.([]any); isList {
			out := make([]any, len(s))
			for i := range s {
				out[i] = eval(s[i])
			}
			return out
		}
		if !ok {
			return v
		}
		if _, intrinsic := intrinsicOf(m); !intrinsic {
			// A plain mapping (an IAM Condition block): its values.
			out := make(object, len(m))
			for k, e := range m {
				out[k] = eval(e)
			}
			return out
		}
		for fn, arg := range m {
			switch fn {
			case "Ref":
				switch name := str(arg); {
				case name == "AWS::NoValue":
					return noValue{}
				case get(raw, "Parameters", name, "Type") == "CommaDelimitedList":
					var out []any
					for _, e := range strings.Split(lookup(name), ",") {
						out = append(out, e)
					}
					return out
				default:
					return lookup(name)
				}
			case "Fn::Join":
				a := list(arg)
				var parts []string
				for _, e := range list(eval(a[1])) {
					parts = append(parts, fmt.Sprint(e))
				}
				return strings.Join(parts, str(a[0]))
			case "Condition":
				return cond(str(arg))
			case "Fn::Equals":
				a := list(arg)
				return fmt.Sprint(eval(a[0])) == fmt.Sprint(eval(a[1]))
			case "Fn::EachMemberEquals": // a rule function
				a := list(arg)
				want := fmt.Sprint(eval(a[1]))
				for _, e := range list(eval(a[0])) {
					if fmt.Sprint(e) != want {
						return false
					}
				}
				return true
			case "Fn::Not":
				return !eval(list(arg)[0]).(bool)
			case "Fn::Or", "Fn::And":
				res := fn == "Fn::And"
				for _, c := range list(arg) {
					b := eval(c).(bool)
					if fn == "Fn::Or" {
						res = res || b
					} else {
						res = res && b
					}
				}
				return res
			case "Fn::If":
				a := list(arg)
				if cond(str(a[0])) {
					return eval(a[1])
				}
				return eval(a[2])
			case "Fn::Split":
				a := list(arg)
				var out []any
				for _, p := range strings.Split(eval(a[1]).(string), str(a[0])) {
					out = append(out, p)
				}
				return out
			case "Fn::Select":
				a := list(arg)
				i, _ := strconv.Atoi(fmt.Sprint(eval(a[0])))
				items := eval(a[1]).([]any)
				if i >= len(items) {
					t.Fatalf("Fn::Select index %d out of range of %v", i, items)
				}
				return items[i]
			case "Fn::Sub":
				a := list(arg)
				vars := map[string]string{}
				if len(a) == 2 {
					for k, v := range a[1].(object) {
						vars[k] = fmt.Sprint(eval(v))
					}
				}
				return regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(str(a[0]), func(ref string) string {
					name := ref[2 : len(ref)-1]
					if v, ok := vars[name]; ok {
						return v
					}
					return lookup(name)
				})
			}
		}
		return v
	}
	return eval(v)
}

func TestBedrockGrantFollowsModelId(t *testing.T) {
	raw := rawTemplate(t)
	pattern := regexp.MustCompile(str(get(raw, "Parameters", "ModelId", "AllowedPattern")))
	cases := map[string][]string{
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0": {
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			"arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
		},
		"global.anthropic.claude-haiku-4-5-20251001-v1:0": {
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0",
			"arn:aws:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
		},
		"eu.amazon.nova-pro-v1:0": {
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0",
			"arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
		},
		"anthropic.claude-3-5-haiku-20241022-v1:0": {
			"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0",
		},
	}
	for _, fnID := range []string{"WorkerFunction"} {
		_, stmts := roleStatements(t, raw, fnID)
		var resource any
		for _, st := range stmts {
			if slices.Contains(st.actions, "bedrock:InvokeModel") {
				resource = st.resources
			}
		}
		if resource == nil {
			t.Fatalf("%s: no bedrock:InvokeModel statement", fnID)
		}
		for modelID, want := range cases {
			if !pattern.MatchString(modelID) {
				t.Errorf("ModelId %s does not match the parameter's AllowedPattern", modelID)
			}
			got := fmt.Sprint(evalIntrinsic(t, raw, resource, map[string]string{"ModelId": modelID}))
			if got != fmt.Sprint([]any{anySlice(want)}) {
				t.Errorf("%s with ModelId %s grants %s, want %v", fnID, modelID, got, want)
			}
		}
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
