package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Function is one AWS::Serverless::Function of the template, as the local
// stack runs it.
type Function struct {
	LogicalID string        // InvokeFunction
	Name      string        // invoke: the folder under functions/
	Dir       string        // absolute path of functions/<Name>
	Env       []string      // Globals + the function's Environment, intrinsics resolved
	Timeout   time.Duration // Properties.Timeout, else Globals, else 3 s (the Lambda default)
	Routes    []Route       // its HttpApi events
	Stream    bool          // it has a DynamoDB stream event (stream-reduce)
	BatchSize int           // that event's BatchSize (default 100)
	Queues    []QueueEvent  // its SQS events (worker)
	Schedules []Schedule    // its Schedule and ScheduleV2 events (sweeper)
}

// QueueEvent is one SQS event of a function: the event source mapping that
// receives from a queue of the template and invokes the function.
type QueueEvent struct {
	Name      string // the event's name (WorkerMessages)
	Queue     string // the queue's logical id (WorkerQueue)
	BatchSize int    // default 10, as on Lambda
	// ReportBatchItemFailures: the function answers an SQSEventResponse
	// naming the failed messages (FunctionResponseTypes); without it any
	// answer that is not an error deletes the whole batch.
	ReportBatchItemFailures bool
}

// Schedule is one Schedule (EventBridge rule) or ScheduleV2 (EventBridge
// Scheduler) event of a function.
type Schedule struct {
	Name       string        // the event's name (Sweep)
	Type       string        // Schedule or ScheduleV2
	Expression string        // rate(1 minute), cron(...), at(...)
	Rate       time.Duration // the period of a rate(...) expression; 0 for cron and at
	Input      string        // the event's Input, if it sets one
	Disabled   bool          // State DISABLED (or Enabled: false)
}

// Queue is an AWS::SQS::Queue of the template.
type Queue struct {
	LogicalID         string
	VisibilityTimeout time.Duration // default 30 s, as on SQS
	// DeadLetter is the logical id of the RedrivePolicy's deadLetterTargetArn
	// and MaxReceiveCount its maxReceiveCount; "" and 0 without a policy.
	DeadLetter      string
	MaxReceiveCount int
}

// Route is one HttpApi event: Method and Path ("/v1/runs/{run_id}").
type Route struct {
	Method   string
	Path     string
	Function string // the function's Name
	segs     []string
}

// Key is the API Gateway route key, "POST /v1/runs/{run_id}/resume".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Template is what the local stack reads of template.yaml.
type Template struct {
	Path      string
	Functions []*Function
	Routes    []Route
	Queues    map[string]*Queue // by logical id
}

// Locals are the values of intrinsics (!Ref Table, !GetAtt ...) on the local
// stack, by environment variable name (TABLE_NAME) or by the intrinsic
// itself, written "!Ref WorkerQueue" or "!GetAtt WorkerQueue.Arn" (short
// form, whichever form the template uses); the name wins. An intrinsic
// without one is a !Ref to a parameter (its Default) or a !Sub of
// parameters.
type Locals map[string]string

// functionName maps a logical id to its folder under functions/, by the
// Makefile's convention (target build-<LogicalId> builds functions/<name>):
// the id without its "Function" suffix, in kebab case. InvokeFunction ->
// invoke, StreamReduceFunction -> stream-reduce.
func functionName(logicalID string) string {
	base := strings.TrimSuffix(logicalID, "Function")
	var b strings.Builder
	for i, r := range base {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// LoadTemplate reads the SAM template at path. CloudFormation's short-form
// tags (!Ref, !Sub, !GetAtt, !If ...) are read as generic tagged nodes;
// where an environment variable is an intrinsic, locals (or the referenced
// parameter's Default) gives its local value.
func LoadTemplate(path string, locals Locals) (*Template, error) {
	root, err := readTemplate(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	t := &Template{Path: abs}
	params := defaults(get(root, "Parameters"))
	conds := get(root, "Conditions")
	resources := get(root, "Resources")
	if resources == nil || resources.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("template %s: no Resources", path)
	}
	types := map[string]string{}
	for i := 0; i+1 < len(resources.Content); i += 2 {
		types[resources.Content[i].Value] = scalar(get(resources.Content[i+1], "Type"))
	}
	if t.Queues, err = queues(resources, types); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	globals := get(get(root, "Globals"), "Function")
	globalEnv := get(get(globals, "Environment"), "Variables")
	globalTimeout := scalar(get(globals, "Timeout"))

	for i := 0; i+1 < len(resources.Content); i += 2 {
		id, res := resources.Content[i].Value, resources.Content[i+1]
		if scalar(get(res, "Type")) != "AWS::Serverless::Function" {
			continue
		}
		props := get(res, "Properties")
		f := &Function{LogicalID: id, Name: functionName(id), BatchSize: 100}
		f.Dir = filepath.Join(filepath.Dir(abs), "functions", f.Name)
		if st, err := os.Stat(filepath.Join(f.Dir, "main.go")); err != nil || st.IsDir() {
			return nil, fmt.Errorf("template %s: %s: no functions/%s/main.go (the function folder is the logical id without \"Function\", in kebab case)", path, id, f.Name)
		}
		env := map[string]string{}
		for _, vars := range []*yaml.Node{globalEnv, get(get(props, "Environment"), "Variables")} {
			if vars == nil {
				continue
			}
			for j := 0; j+1 < len(vars.Content); j += 2 {
				name, val := vars.Content[j].Value, vars.Content[j+1]
				v, err := resolve(name, val, params, types, locals, conds)
				if errors.Is(err, errNoValue) {
					delete(env, name) // !Ref AWS::NoValue: the variable is not set
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("template %s: %s: environment variable %s: %w", path, id, name, err)
				}
				env[name] = v
			}
		}
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			f.Env = append(f.Env, k+"="+env[k])
		}
		timeout := globalTimeout
		if s := scalar(get(props, "Timeout")); s != "" {
			timeout = s
		}
		f.Timeout = 3 * time.Second
		if n, err := strconv.Atoi(timeout); err == nil && n > 0 {
			f.Timeout = time.Duration(n) * time.Second
		}
		evs := get(props, "Events")
		if evs != nil {
			for j := 0; j+1 < len(evs.Content); j += 2 {
				ev := evs.Content[j+1]
				ep := get(ev, "Properties")
				switch scalar(get(ev, "Type")) {
				case "HttpApi":
					method, p := strings.ToUpper(scalar(get(ep, "Method"))), scalar(get(ep, "Path"))
					if method == "" || !strings.HasPrefix(p, "/") {
						return nil, fmt.Errorf("template %s: %s: HttpApi event %s needs Method and Path", path, id, evs.Content[j].Value)
					}
					r := Route{Method: method, Path: p, Function: f.Name, segs: splitPath(p)}
					f.Routes = append(f.Routes, r)
					t.Routes = append(t.Routes, r)
				case "DynamoDB":
					f.Stream = true
					if n, err := strconv.Atoi(scalar(get(ep, "BatchSize"))); err == nil && n > 0 {
						f.BatchSize = n
					}
				case "SQS":
					qe, err := queueEvent(evs.Content[j].Value, ep, types)
					if err != nil {
						return nil, fmt.Errorf("template %s: %s: %w", path, id, err)
					}
					f.Queues = append(f.Queues, qe)
				case "Schedule", "ScheduleV2":
					sc, err := schedule(evs.Content[j].Value, scalar(get(ev, "Type")), ep)
					if err != nil {
						return nil, fmt.Errorf("template %s: %s: %w", path, id, err)
					}
					f.Schedules = append(f.Schedules, sc)
				}
			}
		}
		t.Functions = append(t.Functions, f)
	}
	if len(t.Functions) == 0 {
		return nil, fmt.Errorf("template %s: no AWS::Serverless::Function", path)
	}
	sortRoutes(t.Routes)
	return t, nil
}

// readTemplate parses the template's YAML. CloudFormation's short-form tags
// stay on the nodes.
func readTemplate(path string) (*yaml.Node, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("template %s: empty", path)
	}
	return doc.Content[0], nil
}

// ReadQueues reads only the template's queues: the local stack starts them
// before it resolves the functions' environment, which names their URLs.
func ReadQueues(path string) (map[string]*Queue, error) {
	root, err := readTemplate(path)
	if err != nil {
		return nil, err
	}
	resources := get(root, "Resources")
	types := map[string]string{}
	if resources != nil {
		for i := 0; i+1 < len(resources.Content); i += 2 {
			types[resources.Content[i].Value] = scalar(get(resources.Content[i+1], "Type"))
		}
	}
	qs, err := queues(resources, types)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	return qs, nil
}

// queues reads every AWS::SQS::Queue: its visibility timeout and redrive
// policy.
func queues(resources *yaml.Node, types map[string]string) (map[string]*Queue, error) {
	out := map[string]*Queue{}
	if resources == nil {
		return out, nil
	}
	for i := 0; i+1 < len(resources.Content); i += 2 {
		id, res := resources.Content[i].Value, resources.Content[i+1]
		if types[id] != "AWS::SQS::Queue" {
			continue
		}
		props := get(res, "Properties")
		q := &Queue{LogicalID: id, VisibilityTimeout: 30 * time.Second}
		if s := scalar(get(props, "VisibilityTimeout")); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > 43200 {
				return nil, fmt.Errorf("%s: VisibilityTimeout %q is not 0 to 43200 seconds", id, s)
			}
			q.VisibilityTimeout = time.Duration(n) * time.Second
		}
		if rp := get(props, "RedrivePolicy"); rp != nil {
			target, attr, ok := getAtt(get(rp, "deadLetterTargetArn"))
			if !ok || attr != "Arn" || types[target] != "AWS::SQS::Queue" {
				return nil, fmt.Errorf("%s: RedrivePolicy.deadLetterTargetArn must be !GetAtt <a queue of the template>.Arn", id)
			}
			n, err := strconv.Atoi(scalar(get(rp, "maxReceiveCount")))
			if err != nil || n < 1 || n > 1000 {
				return nil, fmt.Errorf("%s: RedrivePolicy.maxReceiveCount must be 1 to 1000", id)
			}
			q.DeadLetter, q.MaxReceiveCount = target, n
		}
		out[id] = q
	}
	return out, nil
}

// getAtt reads !GetAtt X.Attr, !GetAtt [X, Attr] or {"Fn::GetAtt": ...}.
func getAtt(n *yaml.Node) (id, attr string, ok bool) {
	if n == nil {
		return "", "", false
	}
	arg := n
	if n.Tag != "!GetAtt" {
		if n.Kind != yaml.MappingNode || len(n.Content) != 2 || n.Content[0].Value != "Fn::GetAtt" {
			return "", "", false
		}
		arg = n.Content[1]
	}
	switch arg.Kind {
	case yaml.ScalarNode:
		id, attr, ok = strings.Cut(arg.Value, ".")
		return id, attr, ok && id != "" && attr != ""
	case yaml.SequenceNode:
		if len(arg.Content) == 2 {
			return arg.Content[0].Value, arg.Content[1].Value, arg.Content[0].Value != "" && arg.Content[1].Value != ""
		}
	}
	return "", "", false
}

// queueEvent reads an SQS event's properties.
func queueEvent(name string, ep *yaml.Node, types map[string]string) (QueueEvent, error) {
	q, attr, ok := getAtt(get(ep, "Queue"))
	if !ok || attr != "Arn" || types[q] != "AWS::SQS::Queue" {
		return QueueEvent{}, fmt.Errorf("SQS event %s: Queue must be !GetAtt <a queue of the template>.Arn", name)
	}
	qe := QueueEvent{Name: name, Queue: q, BatchSize: 10}
	if s := scalar(get(ep, "BatchSize")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			return QueueEvent{}, fmt.Errorf("SQS event %s: BatchSize %q is not 1 to 10000", name, s)
		}
		qe.BatchSize = n
	}
	if frt := get(ep, "FunctionResponseTypes"); frt != nil {
		for _, c := range frt.Content {
			if c.Value == "ReportBatchItemFailures" {
				qe.ReportBatchItemFailures = true
			}
		}
	}
	return qe, nil
}

var rateRE = regexp.MustCompile(`^rate\(\s*([0-9]+)\s+(minute|minutes|hour|hours|day|days)\s*\)$`)

// schedule reads a Schedule or ScheduleV2 event's properties. A rate
// expression gives the period; cron and at expressions are kept as written.
func schedule(name, typ string, ep *yaml.Node) (Schedule, error) {
	sc := Schedule{Name: name, Type: typ, Expression: strings.TrimSpace(scalar(get(ep, "ScheduleExpression")))}
	if typ == "Schedule" {
		sc.Expression = strings.TrimSpace(scalar(get(ep, "Schedule")))
	}
	sc.Input = scalar(get(ep, "Input"))
	sc.Disabled = strings.EqualFold(scalar(get(ep, "State")), "DISABLED") || scalar(get(ep, "Enabled")) == "false"
	switch {
	case strings.HasPrefix(sc.Expression, "rate("):
		m := rateRE.FindStringSubmatch(sc.Expression)
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		// AWS: the unit is singular for 1 and plural otherwise.
		if m == nil || n < 1 || (n == 1) != !strings.HasSuffix(m[2], "s") {
			return Schedule{}, fmt.Errorf("%s event %s: %q is not rate(<n> minute[s]|hour[s]|day[s]) (singular for 1, plural otherwise)", typ, name, sc.Expression)
		}
		unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.TrimSuffix(m[2], "s")]
		sc.Rate = time.Duration(n) * unit
	case strings.HasPrefix(sc.Expression, "cron("), strings.HasPrefix(sc.Expression, "at("):
	default:
		return Schedule{}, fmt.Errorf("%s event %s: ScheduleExpression %q is not rate(...), cron(...) or at(...)", typ, name, sc.Expression)
	}
	return sc, nil
}

// Function returns the function named name (its folder) or logical id.
func (t *Template) Function(name string) *Function {
	for _, f := range t.Functions {
		if f.Name == name || f.LogicalID == name {
			return f
		}
	}
	return nil
}

// resolve gives an environment value its local meaning.
// A value of !Ref AWS::NoValue (an !If branch) is errNoValue: the variable
// is left unset, as CloudFormation leaves it.
func resolve(name string, n *yaml.Node, params map[string]string, types map[string]string, locals Locals, conds *yaml.Node) (string, error) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "" || n.Tag == "!!str" || n.Tag == "!!int" || n.Tag == "!!bool" || n.Tag == "!!float") {
		return n.Value, nil
	}
	// An intrinsic: short form (!Ref X) or long form ({Ref: X}).
	tag, arg := n.Tag, n
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		tag, arg = "!"+strings.TrimPrefix(n.Content[0].Value, "Fn::"), n.Content[1]
	}
	if v, ok := locals[name]; ok {
		return v, nil
	}
	if tag == "!Ref" && arg.Value == "AWS::NoValue" {
		return "", errNoValue
	}
	if tag == "!If" {
		if arg.Kind != yaml.SequenceNode || len(arg.Content) != 3 {
			return "", errors.New("!If takes [condition, value if true, value if false]")
		}
		holds, err := condition(scalar(arg.Content[0]), conds, params, 0)
		if err != nil {
			return "", err
		}
		branch := arg.Content[2]
		if holds {
			branch = arg.Content[1]
		}
		return resolve(name, branch, params, types, locals, conds)
	}
	if tag == "!Ref" && arg.Kind == yaml.ScalarNode {
		if v, ok := locals["!Ref "+arg.Value]; ok {
			return v, nil
		}
	}
	if id, attr, ok := getAtt(n); ok {
		if v, ok := locals["!GetAtt "+id+"."+attr]; ok {
			return v, nil
		}
	}
	if tag == "!Ref" && arg.Kind == yaml.ScalarNode {
		if d, ok := params[arg.Value]; ok {
			return d, nil
		}
	}
	if tag == "!Sub" && arg.Kind == yaml.ScalarNode {
		// ${Param} from the parameters' defaults; anything else is not local.
		var missing string
		out := subRE.ReplaceAllStringFunc(arg.Value, func(m string) string {
			k := m[2 : len(m)-1]
			if d, ok := params[k]; ok {
				return d
			}
			missing = k
			return m
		})
		if missing == "" {
			return out, nil
		}
	}
	return "", fmt.Errorf("%s has no local value (add it to the local stack's defaults)", tag)
}

var subRE = regexp.MustCompile(`\$\{[^}]+\}`)

var errNoValue = errors.New("AWS::NoValue")

// condition evaluates the template's condition named name on the
// parameters' defaults: Fn::Equals, Fn::Not, Fn::And, Fn::Or and
// Condition, over literals and !Ref of a parameter. Anything else has no
// local meaning and is an error, not a guess.
func condition(name string, conds *yaml.Node, params map[string]string, depth int) (bool, error) {
	c := get(conds, name)
	if c == nil {
		return false, fmt.Errorf("!If names condition %q, which the template does not define", name)
	}
	return condExpr(c, conds, params, depth+1)
}

func condExpr(n *yaml.Node, conds *yaml.Node, params map[string]string, depth int) (bool, error) {
	if depth > 16 {
		return false, errors.New("conditions nest too deeply")
	}
	tag, arg := n.Tag, n
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		tag, arg = "!"+strings.TrimPrefix(n.Content[0].Value, "Fn::"), n.Content[1]
	}
	args := func(min, max int) ([]*yaml.Node, error) {
		if arg.Kind != yaml.SequenceNode || len(arg.Content) < min || len(arg.Content) > max {
			return nil, fmt.Errorf("%s takes %d to %d arguments", tag, min, max)
		}
		return arg.Content, nil
	}
	switch tag {
	case "!Condition":
		return condition(scalar(arg), conds, params, depth)
	case "!Equals":
		a, err := args(2, 2)
		if err != nil {
			return false, err
		}
		l, err := condValue(a[0], params)
		if err != nil {
			return false, err
		}
		r, err := condValue(a[1], params)
		return err == nil && l == r, err
	case "!Not":
		a, err := args(1, 1)
		if err != nil {
			return false, err
		}
		v, err := condExpr(a[0], conds, params, depth+1)
		return !v, err
	case "!And", "!Or":
		a, err := args(2, 10)
		if err != nil {
			return false, err
		}
		for _, x := range a {
			v, err := condExpr(x, conds, params, depth+1)
			if err != nil {
				return false, err
			}
			if v == (tag == "!Or") {
				return v, nil
			}
		}
		return tag == "!And", nil
	}
	return false, fmt.Errorf("condition %s has no local meaning", tag)
}

func condValue(n *yaml.Node, params map[string]string) (string, error) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "" || n.Tag == "!!str" || n.Tag == "!!int" || n.Tag == "!!bool" || n.Tag == "!!float") {
		return n.Value, nil
	}
	tag, arg := n.Tag, n
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		tag, arg = "!"+strings.TrimPrefix(n.Content[0].Value, "Fn::"), n.Content[1]
	}
	if tag == "!Ref" {
		if v, ok := params[scalar(arg)]; ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("condition value %s has no local value", tag)
}

// defaults maps each parameter that has a Default to it.
func defaults(params *yaml.Node) map[string]string {
	out := map[string]string{}
	if params == nil {
		return out
	}
	for i := 0; i+1 < len(params.Content); i += 2 {
		if d := get(params.Content[i+1], "Default"); d != nil && d.Kind == yaml.ScalarNode {
			out[params.Content[i].Value] = d.Value
		}
	}
	return out
}

func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// sortRoutes orders routes the way API Gateway prefers them: more literal
// segments first, then greedy {proxy+} last.
func sortRoutes(rs []Route) {
	score := func(r Route) (lit int, greedy bool) {
		for _, s := range r.segs {
			switch {
			case strings.HasSuffix(s, "+}"):
				greedy = true
			case !strings.HasPrefix(s, "{"):
				lit++
			}
		}
		return
	}
	sort.SliceStable(rs, func(i, j int) bool {
		li, gi := score(rs[i])
		lj, gj := score(rs[j])
		if gi != gj {
			return !gi
		}
		if len(rs[i].segs) != len(rs[j].segs) && li == lj {
			return len(rs[i].segs) > len(rs[j].segs)
		}
		return li > lj
	})
}

// match finds the route for method and path and its path parameters.
func match(rs []Route, method, path string) (r *Route, params map[string]string) {
	segs := splitPath(path)
	for i := range rs {
		if rs[i].Method != method && rs[i].Method != "ANY" {
			continue
		}
		if p, ok := matchSegs(rs[i].segs, segs); ok {
			return &rs[i], p
		}
	}
	return nil, nil
}

func matchSegs(pattern, segs []string) (map[string]string, bool) {
	params := map[string]string{}
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "+}") {
			if i >= len(segs) {
				return nil, false
			}
			params[p[1:len(p)-2]] = strings.Join(segs[i:], "/")
			return params, true
		}
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if segs[i] == "" {
				return nil, false
			}
			params[p[1:len(p)-1]] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	if len(pattern) != len(segs) {
		return nil, false
	}
	return params, true
}
