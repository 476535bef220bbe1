package toolpolicy

import (
	"cmp"
	"slices"
	"sync"
	"unicode/utf8"
)

// tri is a condition's outcome: a condition that cannot be evaluated is
// neither true nor false, and groups combine outcomes as Kleene's logic
// does (false AND unknown is false, true OR unknown is true).
type tri uint8

const (
	tFalse tri = iota
	tTrue
	tUnknown
	tUnset // not evaluated yet (the memo only)
)

func triOf(b bool) tri {
	if b {
		return tTrue
	}
	return tFalse
}

// cause says why a condition is tUnknown; the reason of a rule fired
// because of it names it.
type cause uint8

const (
	causeNone cause = iota
	causeNoInput
	causeInput
	causeStructure
	causeDuplicate
	causeType
	causeMeta
	causeHistory
	causePriorResult
	causeMatterSteps
	causeNotEvaluable
	numCauses
)

var causeText = [numCauses]string{
	causeNoInput:      "the call has no input",
	causeInput:        "the input is not a valid JSON object",
	causeStructure:    "the input's structure does not fit the rule's JSON pointer",
	causeDuplicate:    "the input has a duplicate key on the rule's JSON pointer",
	causeType:         "an input value has another JSON type than the rule compares",
	causeMeta:         "metadata the rule compares with is not known",
	causeHistory:      "the run's earlier steps are not known",
	causePriorResult:  "an earlier step's result cannot be read as the condition needs",
	causeMatterSteps:  "the steps of the matter's other runs are not known",
	causeNotEvaluable: "the condition cannot be evaluated",
}

// unknownNote is what a rule's reason gains when it fired because its
// conditions could not be evaluated.
func unknownNote(c cause) string {
	return " (condition could not be evaluated: " + causeText[c] + "; treated as fired, fail-closed)"
}

// evaluator holds what one decision reads: the call, the input's tape
// (built on first use) and scratch space. It is pooled, so a decision
// allocates nothing for it.
type evaluator struct {
	in      []byte
	meta    Metadata // a copy, so the Call does not escape to the heap
	memo    []tri    // per leaf id: its outcome in this decision, or tUnset
	fired   []int32  // indexes of the fired rules among the tool's rules
	why     []cause  // per fired rule: why it fired undecided, or causeNone
	ptrSel  []selection
	firsts  map[string]int
	top     []int32 // per tables.firsts id: the top-level member, -1 absent, -2 twice
	tape    []tnode
	input   int8 // 0 not parsed yet, 1 parsed, -1 not a JSON object
	sel     []int32
	scratch []byte
	// Per tape node, the index in spans of its decoded text (a string with
	// escapes) and of its address's domain, or -1; sized on first use in
	// a decision, so many addresses cost linear time.
	textAt, domAt []int32
	spans         []span
	// sent is every string of the input joined (see sentText), in scratch;
	// built on first use in a decision.
	sent      span
	sentBuilt bool
	cause     cause
	causes    []cause // per leaf id: why it is tUnknown
	// hist is the run's earlier steps (Call.History; nil: not known) and
	// tabs the policy's tables, for a prior condition's where.
	hist []Step
	tabs tables
	// matter is the matter's other runs' steps (Call.Matter; nil: not
	// known), and matterHits those that satisfied a matter-scoped prior.
	matter     []Step
	matterHits []PriorStep
}

// selection is what a pointer selected in this decision: e.sel[start:end],
// and tUnknown (with its cause) if part of it could not be followed.
type selection struct {
	start, end int32
	res        tri // tUnset: not resolved yet
	cause      cause
}

// span is a cached result in e.scratch[start:end]; ok is false for a
// malformed address.
type span struct {
	start, end int32
	ok         bool
}

var evaluators = sync.Pool{New: func() any {
	return &evaluator{tape: make([]tnode, 0, 64), sel: make([]int32, 0, 32), scratch: make([]byte, 0, 1024)}
}}

func newEvaluator(c *Call, t tables) *evaluator {
	e := evaluators.Get().(*evaluator)
	e.in, e.meta, e.input, e.cause, e.sentBuilt = c.Input, c.Meta, 0, causeNone, false
	e.hist, e.tabs, e.matter, e.matterHits = c.History, t, c.Matter, e.matterHits[:0]
	if cap(e.memo) < t.leaves {
		e.memo, e.causes = make([]tri, t.leaves), make([]cause, t.leaves)
	}
	e.memo, e.causes = e.memo[:t.leaves], e.causes[:t.leaves]
	for i := range e.memo {
		e.memo[i] = tUnset
	}
	if cap(e.ptrSel) < t.ptrs {
		e.ptrSel = make([]selection, t.ptrs)
	}
	e.ptrSel = e.ptrSel[:t.ptrs]
	e.firsts = t.firsts
	for i := range e.ptrSel {
		e.ptrSel[i] = selection{res: tUnset}
	}
	return e
}

// maxPooled bounds what a pooled evaluator keeps, so one huge input does not
// pin its memory.
const maxPooled = 1 << 16

func (e *evaluator) release() {
	e.in, e.meta, e.firsts, e.hist, e.tabs, e.matter = nil, Metadata{}, nil, nil, tables{}, nil
	e.matterHits = e.matterHits[:0]
	if cap(e.tape) > maxPooled/16 || cap(e.textAt) > maxPooled/16 || cap(e.domAt) > maxPooled/16 || cap(e.scratch) > maxPooled {
		return
	}
	e.tape, e.sel, e.scratch, e.fired, e.why = e.tape[:0], e.sel[:0], e.scratch[:0], e.fired[:0], e.why[:0]
	e.textAt, e.domAt, e.spans = e.textAt[:0], e.domAt[:0], e.spans[:0]
	evaluators.Put(e)
}

func (e *evaluator) unknown(c cause) tri {
	if e.cause == causeNone {
		e.cause = c
	}
	return tUnknown
}

func (e *evaluator) all(cs []cond) tri {
	res := tTrue
	for i := range cs {
		switch e.eval(&cs[i]) {
		case tFalse:
			return tFalse
		case tUnknown:
			res = tUnknown
		}
	}
	return res
}

// eval evaluates a condition. When it is tUnknown, e.cause says why: the
// cause of the first undecided condition that made it so, not of one whose
// outcome did not matter (an undecided member of an any that held).
func (e *evaluator) eval(c *cond) tri {
	outer := e.cause
	e.cause = causeNone
	r := e.evalNode(c)
	if r == tUnknown {
		e.cause = cmp.Or(outer, e.cause, causeNotEvaluable)
	} else {
		e.cause = outer
	}
	return r
}

func (e *evaluator) evalNode(c *cond) tri {
	switch c.kind {
	case condAll:
		return e.all(c.kids)
	case condAny:
		res := tFalse
		for i := range c.kids {
			switch e.eval(&c.kids[i]) {
			case tTrue:
				return tTrue
			case tUnknown:
				res = tUnknown
			}
		}
		return res
	case condNot:
		switch r := e.eval(&c.kids[0]); r {
		case tTrue:
			return tFalse
		case tFalse:
			return tTrue
		default:
			return r
		}
	}
	// A leaf's outcome depends on the call alone, and rules often share
	// leaves ("a recipient outside the firm"): each is evaluated once.
	if r := e.memo[c.id]; r != tUnset {
		if r == tUnknown {
			e.cause = e.causes[c.id]
		}
		return r
	}
	var r tri
	switch {
	case c.kind == condPrior:
		r = e.priorLeaf(c.prior)
	case c.subj != metaNone:
		r = e.metaLeaf(c)
	default:
		r = e.inputLeaf(c)
	}
	e.memo[c.id] = r
	if r == tUnknown {
		e.causes[c.id] = cmp.Or(e.cause, causeNotEvaluable)
	}
	return r
}

// priorLeaf reports whether an earlier step of the run (and, for scope
// "matter", of the matter's other runs) is the prior condition's tool,
// completed with its status, its result satisfying where. Not known (no
// history given): undecided. A matching step whose result cannot be read
// as where needs, and none that satisfies it: undecided (fail-closed, as
// for the input). A step of another run that satisfies it is recorded
// (Decision.MatterSteps).
func (e *evaluator) priorLeaf(p *prior) tri {
	if e.hist == nil {
		return e.unknown(causeHistory)
	}
	res := e.priorIn(p, e.hist, false)
	if res == tTrue || !p.matter {
		if res == tUnknown {
			return e.unknown(causePriorResult)
		}
		return res
	}
	if e.matter == nil {
		return e.unknown(causeMatterSteps)
	}
	switch e.priorIn(p, e.matter, true) {
	case tTrue:
		return tTrue
	case tUnknown:
		res = tUnknown
	}
	if res == tUnknown {
		return e.unknown(causePriorResult)
	}
	return res
}

// priorIn looks for the prior in steps; other: they are other runs'
// (the first that satisfies it, and those read before it that could not
// be, are recorded).
func (e *evaluator) priorIn(p *prior, steps []Step, other bool) tri {
	res := tFalse
	for i := range steps {
		st := &steps[i]
		if st.Tool != p.tool || st.Status != p.status {
			continue
		}
		r := tTrue
		if len(p.where) > 0 {
			sub := newEvaluator(&Call{Input: st.Result, Meta: e.meta}, e.tabs)
			r = sub.all(p.where)
			sub.release()
		}
		if other && r != tFalse {
			hit := PriorStep{RunID: st.RunID, Seq: st.Seq, Hash: st.Hash, Tool: st.Tool, Status: st.Status, Unread: r == tUnknown}
			if !slices.Contains(e.matterHits, hit) {
				e.matterHits = append(e.matterHits, hit)
			}
		}
		switch r {
		case tTrue:
			return tTrue
		case tUnknown:
			res = tUnknown
		}
	}
	return res
}

// parsed builds the tape of the input once per decision.
func (e *evaluator) parsed() bool {
	if e.input == 0 {
		var ok bool
		e.tape, ok = parseTape(e.in, e.tape)
		e.input = -1
		if ok {
			e.input = 1
			e.indexTop()
		}
	}
	return e.input == 1
}

// indexTop finds, in one pass over the input's top-level members, the
// members the policy's pointers start with.
func (e *evaluator) indexTop() {
	n := len(e.firsts)
	if cap(e.top) < n {
		e.top = make([]int32, n)
	}
	e.top = e.top[:n]
	for i := range e.top {
		e.top[i] = -1
	}
	root := &e.tape[0]
	for k, c := int32(0), int32(1); k < root.count; k++ {
		nd := &e.tape[c]
		key := e.in[nd.kstart:nd.kend]
		mark := len(e.scratch)
		if nd.kesc {
			e.scratch = appendUnescaped(e.scratch, key)
			key = e.scratch[mark:]
		}
		if id, ok := e.firsts[string(key)]; ok {
			if e.top[id] == -1 {
				e.top[id] = c
			} else {
				e.top[id] = -2
			}
		}
		e.scratch = e.scratch[:mark]
		c = nd.next
	}
}

func (e *evaluator) inputLeaf(c *cond) tri {
	if !e.parsed() {
		if len(e.in) == 0 {
			return e.unknown(causeNoInput)
		}
		return e.unknown(causeInput)
	}
	if c.every {
		return triOf(e.anyString(c))
	}
	// Each pointer is resolved once per decision; leaves share it.
	ps := &e.ptrSel[c.ptrID]
	if ps.res == tUnset {
		start := int32(len(e.sel))
		e.cause = causeNone
		res := e.resolve(0, c.ptr) // tUnknown if part of the pointer could not be followed
		*ps = selection{start: start, end: int32(len(e.sel)), res: res, cause: e.cause}
	}
	if ps.res == tUnknown {
		e.cause = ps.cause
	}
	res, sel := ps.res, e.sel[ps.start:ps.end]
	switch c.op {
	case opExists, opMissing:
		found := len(sel) > 0
		if !found && res == tUnknown {
			return tUnknown
		}
		return triOf(found == (c.op == opExists))
	case opSumGT:
		if res == tUnknown || len(sel) == 0 {
			return res
		}
		sum := 0.0
		for _, n := range sel {
			nd := &e.tape[n]
			if nd.kind != kNumber {
				return e.unknown(causeType)
			}
			sum += parseNumber(e.in[nd.start:nd.end])
		}
		return triOf(sum > c.num)
	}
	// Every other operator holds if it holds for any selected value.
	for _, n := range sel {
		switch e.inputValue(c, n) {
		case tTrue:
			return tTrue
		case tUnknown:
			res = tUnknown
		}
	}
	return res
}

// anyString reports whether the leaf's operator (a detector or matches)
// holds for some string of the input: a member name, a string value or a
// number's text. The tape holds every value once, in document order, so
// this is one pass; a duplicate key is read like any other member.
func (e *evaluator) anyString(c *cond) bool {
	if isDetector(c.op) {
		return detect(c.op, e.sentText())
	}
	for n := int32(1); n < int32(len(e.tape)); n++ {
		nd := &e.tape[n]
		if nd.kend > nd.kstart {
			key := e.in[nd.kstart:nd.kend]
			mark := len(e.scratch)
			if nd.kesc {
				e.scratch = appendUnescaped(e.scratch, key)
				key = e.scratch[mark:]
			}
			hit := e.holds(c, key)
			e.scratch = e.scratch[:mark]
			if hit {
				return true
			}
		}
		switch nd.kind {
		case kString:
			if e.holds(c, e.text(n)) {
				return true
			}
		case kNumber:
			if e.holds(c, e.in[nd.start:nd.end]) {
				return true
			}
		}
	}
	return false
}

// stringSep joins the texts of sentText. No detector's match can hold a
// '"' or span two of them: a separator where the one would be read as an
// optional quote, the other ends the value, and no gap between an
// identifier and its keyword holds two quotes in a row; each side reads as
// the edge of a text (not a digit, a hyphen, a letter or white space). So a
// detector finds something in the joined text exactly when it finds it in
// one of the texts (TestJoinedStringsDetectAsEach), and each detector runs
// once a decision instead of once a string.
const stringSep = `""`

// memberSep joins a member's name to its string or number value in one
// text, so a name that says what the value is reads as it would written
// out: {"password": "hunter22"} as "password: hunter22", {"ssn": 123456789}
// as "ssn: 123456789". A detector finds in such a text whatever it finds in
// the name or in the value (TestMemberTextDetectsNameAndValue): the name
// ends and the value starts at characters that end or start a match as the
// edge of a string does.
const memberSep = ": "

// sentText is every string of the input joined by stringSep, in document
// order: each member's name with its value (memberSep) when that is a
// string or a number, alone otherwise; each other string value (decoded)
// and each other number's text.
func (e *evaluator) sentText() []byte {
	if !e.sentBuilt {
		start := len(e.scratch)
		for n := int32(1); n < int32(len(e.tape)); n++ {
			nd := &e.tape[n]
			named := nd.kend > nd.kstart
			if named {
				key := e.in[nd.kstart:nd.kend]
				if nd.kesc {
					e.scratch = appendUnescaped(e.scratch, key)
				} else {
					e.scratch = append(e.scratch, key...)
				}
			}
			switch nd.kind {
			case kString:
				if named {
					e.scratch = append(e.scratch, memberSep...)
				}
				raw := e.in[nd.start+1 : nd.end-1]
				if nd.esc {
					e.scratch = appendUnescaped(e.scratch, raw)
				} else {
					e.scratch = append(e.scratch, raw...)
				}
				e.scratch = append(e.scratch, stringSep...)
			case kNumber:
				if named {
					e.scratch = append(e.scratch, memberSep...)
				}
				e.scratch = append(e.scratch, e.in[nd.start:nd.end]...)
				e.scratch = append(e.scratch, stringSep...)
			default:
				if named {
					e.scratch = append(e.scratch, stringSep...)
				}
			}
		}
		e.sent, e.sentBuilt = span{start: int32(start), end: int32(len(e.scratch))}, true
	}
	return e.scratch[e.sent.start:e.sent.end:e.sent.end]
}

func (e *evaluator) holds(c *cond, s []byte) bool {
	if c.op == opMatches {
		return c.re.Match(s)
	}
	return detect(c.op, s)
}

// resolve appends the nodes ptr selects under node n to e.sel. It returns
// tUnknown if some branch could not be followed: a token applied to a
// string, number, boolean or null, "*" applied to anything but an array, a
// token that is not an index applied to an array, or a key that appears
// twice. An absent member or an index past the end selects nothing.
func (e *evaluator) resolve(n int32, ptr []segment) tri {
	if len(ptr) == 0 {
		e.sel = append(e.sel, n)
		return tFalse
	}
	s := &ptr[0]
	nd := &e.tape[n]
	if n == 0 && !s.wild { // the root object: its members were indexed
		switch c := e.top[s.first]; c {
		case -1:
			return tFalse
		case -2:
			return e.unknown(causeDuplicate)
		default:
			return e.resolve(c, ptr[1:])
		}
	}
	switch {
	case nd.kind == kArray && s.wild:
		res := tFalse
		for k, c := int32(0), n+1; k < nd.count; k++ {
			if e.resolve(c, ptr[1:]) == tUnknown {
				res = tUnknown
			}
			c = e.tape[c].next
		}
		return res
	case nd.kind == kArray:
		if s.index < 0 {
			if s.name == "-" {
				return tFalse // RFC 6901: the element after the last
			}
			return e.unknown(causeStructure)
		}
		if s.index >= int(nd.count) {
			return tFalse
		}
		c := n + 1
		for k := 0; k < s.index; k++ {
			c = e.tape[c].next
		}
		return e.resolve(c, ptr[1:])
	case nd.kind == kObject && !s.wild:
		found := int32(-1)
		for k, c := int32(0), n+1; k < nd.count; k++ {
			if e.keyIs(c, s.name) {
				if found >= 0 {
					return e.unknown(causeDuplicate)
				}
				found = c
			}
			c = e.tape[c].next
		}
		if found < 0 {
			return tFalse
		}
		return e.resolve(found, ptr[1:])
	}
	return e.unknown(causeStructure)
}

func (e *evaluator) keyIs(n int32, key string) bool {
	nd := &e.tape[n]
	raw := e.in[nd.kstart:nd.kend]
	if !nd.kesc {
		return string(raw) == key
	}
	mark := len(e.scratch)
	e.scratch = appendUnescaped(e.scratch, raw)
	eq := string(e.scratch[mark:]) == key
	e.scratch = e.scratch[:mark]
	return eq
}

// text is the decoded text of string node n. Strings with escapes are
// decoded into scratch once per decision.
func (e *evaluator) text(n int32) []byte {
	nd := &e.tape[n]
	raw := e.in[nd.start+1 : nd.end-1]
	if !nd.esc {
		return raw
	}
	at := e.nodeTable(&e.textAt)
	if i := at[n]; i >= 0 {
		sp := e.spans[i]
		return e.scratch[sp.start:sp.end:sp.end]
	}
	start := len(e.scratch)
	e.scratch = appendUnescaped(e.scratch, raw)
	at[n] = int32(len(e.spans))
	e.spans = append(e.spans, span{start: int32(start), end: int32(len(e.scratch))})
	return e.scratch[start:len(e.scratch):len(e.scratch)]
}

// nodeTable returns the per-node table t, sized to the tape and cleared on
// its first use in a decision (release empties it).
func (e *evaluator) nodeTable(t *[]int32) []int32 {
	if len(*t) == 0 {
		if cap(*t) < len(e.tape) {
			*t = make([]int32, len(e.tape))
		}
		*t = (*t)[:len(e.tape)]
		for i := range *t {
			(*t)[i] = -1
		}
	}
	return *t
}

// inputValue applies a leaf's operator to one selected input value.
func (e *evaluator) inputValue(c *cond, n int32) tri {
	nd := &e.tape[n]
	switch c.op {
	case opEquals, opNotEquals:
		var res tri
		if c.cmp != metaNone {
			s := scalarMeta(&e.meta, c.cmp)
			if s == "" {
				return e.unknown(causeMeta)
			}
			res = e.equalScalar(n, scalar{kind: kString, s: s})
		} else {
			res = e.equalScalar(n, c.lit)
		}
		return negateIf(res, c.op == opNotEquals)
	case opIn, opNotIn:
		res := tFalse
		if c.cmp != metaNone {
			if nd.kind != kString {
				return e.unknown(causeType)
			}
			t := e.text(n)
			for _, s := range listMeta(&e.meta, c.cmp) {
				if string(t) == s {
					res = tTrue
					break
				}
			}
		} else {
			for i := range c.lits {
				r := e.equalScalar(n, c.lits[i])
				if r != tFalse {
					res = r // tUnknown: the type differs, the same for every value
					break
				}
			}
		}
		return negateIf(res, c.op == opNotIn)
	case opMatches, opNotMatches:
		if nd.kind != kString {
			return e.unknown(causeType)
		}
		return negateIf(triOf(c.re.Match(e.text(n))), c.op == opNotMatches)
	case opDomainIn, opDomainNotIn:
		res := tFalse
		if nd.kind == kArray {
			for k, el := int32(0), n+1; k < nd.count; k++ {
				if r := e.domainValue(c, el); r == tTrue {
					return tTrue
				}
				el = e.tape[el].next
			}
			return res
		}
		return e.domainValue(c, n)
	case opLengthGT:
		switch nd.kind {
		case kString:
			return triOf(float64(utf8.RuneCount(e.text(n))) > c.num)
		case kArray:
			return triOf(float64(nd.count) > c.num)
		}
		return e.unknown(causeType)
	case opContainsCard, opContainsSSN, opContainsCredential:
		if nd.kind != kString {
			return e.unknown(causeType)
		}
		return triOf(detect(c.op, e.text(n)))
	}
	return e.unknown(causeNotEvaluable)
}

// domainValue applies domain_in or domain_not_in to one value. A value that
// is not a well-formed address (not a string included) is in no list.
func (e *evaluator) domainValue(c *cond, n int32) tri {
	in := false
	if e.tape[n].kind == kString {
		if dom, ok := e.domain(n); ok {
			in = e.domainListed(c, dom)
		}
	}
	return triOf(in == (c.op == opDomainIn))
}

// domain is addressDomain of string node n, parsed once per decision.
func (e *evaluator) domain(n int32) ([]byte, bool) {
	at := e.nodeTable(&e.domAt)
	if i := at[n]; i >= 0 {
		sp := e.spans[i]
		return e.scratch[sp.start:sp.end:sp.end], sp.ok
	}
	text := e.text(n) // may grow scratch: take it before the mark
	start := len(e.scratch)
	var buf [256]byte
	dom, ok := addressDomain(text, buf[:0])
	e.scratch = append(e.scratch, dom...)
	at[n] = int32(len(e.spans))
	e.spans = append(e.spans, span{start: int32(start), end: int32(len(e.scratch)), ok: ok})
	return e.scratch[start:len(e.scratch):len(e.scratch)], ok
}

func (e *evaluator) domainListed(c *cond, dom []byte) bool {
	if c.cmp != metaNone {
		return domainListed(dom, listMeta(&e.meta, c.cmp))
	}
	return domainListed(dom, c.domains)
}

// equalScalar compares node n with a literal. Values of another JSON type
// than the literal (an object, an array and null included) cannot be
// compared with it: a rule written for strings is not bypassed by sending
// the same text in an array.
func (e *evaluator) equalScalar(n int32, lit scalar) tri {
	nd := &e.tape[n]
	switch nd.kind {
	case kString:
		if lit.kind == kString {
			return triOf(string(e.text(n)) == lit.s)
		}
	case kNumber:
		if lit.kind == kNumber {
			return triOf(parseNumber(e.in[nd.start:nd.end]) == lit.n)
		}
	case kTrue, kFalse:
		if lit.kind == kTrue {
			return triOf((nd.kind == kTrue) == lit.b)
		}
	}
	return e.unknown(causeType)
}

func negateIf(r tri, neg bool) tri {
	if !neg || r == tUnknown {
		return r
	}
	return triOf(r == tFalse)
}

// metaLeaf evaluates a leaf whose subject is a Metadata field. A string
// field selects its value (nothing when it is empty: exists is false,
// missing true, and a comparison cannot be evaluated); a list field
// selects its elements (an empty list selects nothing, and every
// comparison is false).
func (e *evaluator) metaLeaf(c *cond) tri {
	m := &e.meta
	var vals []string
	if c.subj.isList() {
		vals = listMeta(m, c.subj)
	} else if s := scalarMeta(m, c.subj); s != "" {
		vals = []string{s}
	}
	switch c.op {
	case opExists:
		return triOf(len(vals) > 0)
	case opMissing:
		return triOf(len(vals) == 0)
	}
	if len(vals) == 0 {
		if c.subj.isList() {
			return tFalse
		}
		return e.unknown(causeMeta)
	}
	res := tFalse
	for _, v := range vals {
		switch e.metaValue(c, v) {
		case tTrue:
			return tTrue
		case tUnknown:
			res = tUnknown
		}
	}
	return res
}

// metaValue applies a leaf's operator to one metadata string.
func (e *evaluator) metaValue(c *cond, v string) tri {
	m := &e.meta
	switch c.op {
	case opEquals, opNotEquals:
		want := c.lit.s
		if c.cmp != metaNone {
			if want = scalarMeta(m, c.cmp); want == "" {
				return e.unknown(causeMeta)
			}
		}
		return negateIf(triOf(v == want), c.op == opNotEquals)
	case opIn, opNotIn:
		in := false
		if c.cmp != metaNone {
			for _, s := range listMeta(m, c.cmp) {
				in = in || s == v
			}
		} else {
			for _, l := range c.lits {
				in = in || l.s == v
			}
		}
		return negateIf(triOf(in), c.op == opNotIn)
	case opMatches, opNotMatches:
		return negateIf(triOf(c.re.MatchString(v)), c.op == opNotMatches)
	case opDomainIn, opDomainNotIn:
		in := false
		var buf [256]byte
		if dom, ok := addressDomain([]byte(v), buf[:0]); ok {
			in = e.domainListed(c, dom)
		}
		return triOf(in == (c.op == opDomainIn))
	case opLengthGT:
		return triOf(float64(utf8.RuneCountInString(v)) > c.num)
	case opContainsCard, opContainsSSN, opContainsCredential:
		return triOf(detect(c.op, []byte(v)))
	}
	return e.unknown(causeNotEvaluable)
}

func scalarMeta(m *Metadata, f metaField) string {
	switch f {
	case metaFirmID:
		return m.FirmID
	case metaMatterID:
		return m.MatterID
	case metaAgentKey:
		return m.AgentKey
	case metaUserID:
		return m.UserID
	}
	return ""
}

func listMeta(m *Metadata, f metaField) []string {
	switch f {
	case metaRoles:
		return m.Roles
	case metaFirmDomains:
		return m.FirmDomains
	case metaClientDomains:
		return m.ClientDomains
	}
	return nil
}
