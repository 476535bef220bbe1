package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Class says what a tool does to the world.
type Class string

// Classes (closed).
const (
	// ClassRead changes nothing: after a lost answer it may be called
	// again, and a failed call is retried with backoff.
	ClassRead Class = "read"
	// ClassEffect may change the world: it runs once under its claim, is
	// never retried by Warrant, and a lost answer is
	// effect_outcome_unknown for counsel to reconcile.
	ClassEffect Class = "effect"
)

// Target kinds (closed).
const (
	// TargetMCP is a tool of a remote MCP server (Streamable HTTP).
	TargetMCP = "mcp"
	// TargetLambda is a firm's Lambda function, invoked synchronously with
	// the call as its payload.
	TargetLambda = "lambda"
	// TargetHTTPS is a firm's HTTPS endpoint: one POST of the call's input,
	// with the effect_ref as its Idempotency-Key.
	TargetHTTPS = "https"
	// TargetBuiltin is one of Warrant's own reference tools (pkg/tools),
	// run in process: the embedded catalog's, for a deployment that names
	// none of its own.
	TargetBuiltin = "builtin"
)

// Auth kinds of a server (closed).
const (
	AuthNone              = "none"   // loopback servers only
	AuthBearer            = "bearer" // a token kept in Secrets Manager
	AuthClientCredentials = "oauth_client_credentials"
)

// Catalog is a loaded tool catalog.
type Catalog struct {
	// Version is the hex SHA-256 of the document's RFC 8785 form: what
	// run.started records as the catalog a run was decided under.
	Version string
	Servers map[string]Server
	Tools   map[string]Tool
}

// Server is a system that serves tools.
type Server struct {
	Name string
	Kind string // TargetMCP, TargetHTTPS or TargetLambda
	// URL is an MCP server's endpoint or an HTTPS system's base URL (the
	// tools' paths are under it).
	URL  string
	Auth Auth
	// Function is a Lambda server's function: its ARN, or a qualified ARN
	// naming a version or alias (TargetLambda).
	Function string
	// FinalClientErrors (TargetHTTPS) is the firm's statement that the
	// endpoint's 4xx answers mean nothing happened: a 4xx is then a tool
	// error the model is told, and otherwise an outcome to reconcile.
	FinalClientErrors bool
}

// FirmPlaceholder in an auth secret's name makes the credentials per firm:
// each firm's calls use the secret named with its firm id in place of it.
const FirmPlaceholder = "{firm_id}"

// PerFirm reports whether the server's credentials are per firm.
func (s Server) PerFirm() bool {
	return strings.Contains(s.Auth.Secret, FirmPlaceholder) || strings.Contains(s.Auth.ClientSecret, FirmPlaceholder)
}

// ForFirm is the server with its secrets' names for one firm.
func (s Server) ForFirm(firm string) Server {
	s.Auth.Secret = strings.ReplaceAll(s.Auth.Secret, FirmPlaceholder, firm)
	s.Auth.ClientSecret = strings.ReplaceAll(s.Auth.ClientSecret, FirmPlaceholder, firm)
	s.Auth.Scopes = slices.Clone(s.Auth.Scopes)
	return s
}

// Auth is how Warrant authenticates to a server. Secrets are named (a
// Secrets Manager ARN or name), never held in the catalog; a name holding
// FirmPlaceholder is a secret per firm.
type Auth struct {
	Kind string
	// Secret names the bearer token (AuthBearer).
	Secret string
	// TokenURL, ClientID, ClientSecret (a secret's name) and Scopes are the
	// OAuth 2.1 client credentials grant's (AuthClientCredentials).
	TokenURL, ClientID, ClientSecret string
	Scopes                           []string
}

// Tool is one tool as the model sees it and as Warrant runs it.
type Tool struct {
	Name, Description string
	// InputSchema is the JSON Schema of the tool's input (canonical), and
	// SchemaSHA256 its hash: hex SHA-256 of its RFC 8785 form.
	InputSchema  json.RawMessage
	SchemaSHA256 string
	// SchemaAsWritten is the same schema as the catalog document writes
	// it (compact, its members in the document's order): what the desk's
	// editor lays its fields out by. Its canonical form is InputSchema.
	SchemaAsWritten json.RawMessage
	// Title is the tool's name for people (counsel's desk), "" when the
	// catalog gives none (the desk shows Name).
	Title string
	// Summary is the template counsel's one-line summary is made from
	// (Summarize).
	Summary string
	// MatterField is the JSON pointer of the input member that carries the
	// matter ("" when the tool takes none): the runtime fills it from the
	// run when the model leaves it out, and refuses a call naming another.
	MatterField string
	Class       Class
	Timeout     time.Duration
	Target      Target

	summary *summaryTemplate
}

// Target is where a tool runs.
type Target struct {
	Kind string // its server's kind, or TargetBuiltin
	// Server names the catalog's server. Tool is the tool's name there
	// (default: the tool's own name): an MCP tool's name, the "tool" of a
	// Lambda function's payload, or an HTTPS tool's path under its server's
	// URL. SchemaSHA256 (MCP only) pins the tool's input schema on its
	// server: a server offering the tool with another schema is refused,
	// not called.
	Server, Tool, SchemaSHA256 string
}

// Bounds of a catalog.
const (
	MaxTimeout     = 5 * time.Minute
	DefaultTimeout = 30 * time.Second
)

// The document's wire form (strictly decoded).
type catalogDoc struct {
	Servers map[string]serverDoc `json:"servers,omitempty"`
	Tools   map[string]toolDoc   `json:"tools"`
}

type serverDoc struct {
	Kind              string   `json:"kind"`
	URL               string   `json:"url,omitempty"`
	Auth              *authDoc `json:"auth,omitempty"`
	Function          string   `json:"function,omitempty"`
	FinalClientErrors bool     `json:"final_client_errors,omitempty"`
}

type authDoc struct {
	Kind         string   `json:"kind"`
	Secret       string   `json:"secret,omitempty"`
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

type toolDoc struct {
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Summary     string          `json:"summary"`
	MatterField string          `json:"matter_field,omitempty"`
	Class       Class           `json:"class"`
	Timeout     string          `json:"timeout,omitempty"`
	Target      targetDoc       `json:"target"`
}

type targetDoc struct {
	Kind         string `json:"kind"`
	Server       string `json:"server,omitempty"`
	Tool         string `json:"tool,omitempty"`
	SchemaSHA256 string `json:"schema_sha256,omitempty"`
}

//go:embed default_catalog.json
var embeddedCatalog []byte

// Embedded is the catalog built into the binary: Warrant's reference tools,
// run in process (TOOL_CATALOG unset).
func Embedded() (*Catalog, error) { return Parse(embeddedCatalog) }

// EmbeddedDocument is the embedded catalog's bytes (a starting point for a
// deployment's own).
func EmbeddedDocument() []byte { return bytes.Clone(embeddedCatalog) }

// A name the model sees, and a server's name: what Bedrock takes as a tool
// name (letters, digits, '_' and '-', at most 64).
// maxTitle bounds a tool's title (characters).
const maxTitle = 80

// TitleOK says whether a catalog takes title as a tool's title: 1 to 80
// printable characters on one line, no leading or trailing space.
func TitleOK(title string) bool {
	n := utf8.RuneCountInString(title)
	return n > 0 && n <= maxTitle && utf8.ValidString(title) && strings.TrimSpace(title) == title &&
		!strings.ContainsFunc(title, func(r rune) bool { return !unicode.IsPrint(r) })
}

var toolName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

// Parse reads and validates a catalog document. Every problem is an error
// naming its place in the document (never echoing a value); a catalog that
// does not load is never partly used.
func Parse(doc []byte) (*Catalog, error) {
	var d catalogDoc
	if err := contracts.DecodeStrict(doc, &d); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	_, version, err := contracts.CanonicalInput(doc)
	if err != nil {
		return nil, fmt.Errorf("catalog: not canonicalizable JSON: %w", err)
	}
	c := &Catalog{Version: version, Servers: map[string]Server{}, Tools: map[string]Tool{}}
	for _, name := range sortedKeys(d.Servers) {
		s, err := parseServer(name, d.Servers[name])
		if err != nil {
			return nil, err
		}
		c.Servers[name] = s
	}
	if len(d.Tools) == 0 {
		return nil, invalid("tools", "at least one tool is required")
	}
	for _, name := range sortedKeys(d.Tools) {
		t, err := parseTool(name, d.Tools[name], c.Servers)
		if err != nil {
			return nil, err
		}
		c.Tools[name] = t
	}
	return c, nil
}

func parseServer(name string, d serverDoc) (Server, error) {
	at := "servers." + name
	if !toolName.MatchString(name) {
		return Server{}, invalid("servers", "a server's name is 1 to 64 letters, digits, '_' or '-', starting with a letter")
	}
	switch d.Kind {
	case TargetMCP, TargetHTTPS:
		if d.Function != "" {
			return Server{}, invalid(at+".function", "is for lambda servers only")
		}
		if d.FinalClientErrors && d.Kind != TargetHTTPS {
			return Server{}, invalid(at+".final_client_errors", "is for https servers only")
		}
		return parseHTTPServer(name, d)
	case TargetLambda:
		if d.URL != "" || d.Auth != nil || d.FinalClientErrors {
			return Server{}, invalid(at, "a lambda server takes only kind and function (it is reached with the worker's IAM role)")
		}
		if !functionARN.MatchString(d.Function) {
			return Server{}, invalid(at+".function", "must be a Lambda function's ARN, or a qualified ARN naming a version or alias (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]); never a pattern")
		}
		return Server{Name: name, Kind: d.Kind, Function: d.Function}, nil
	}
	return Server{}, invalid(at+".kind", `must be "mcp", "https" or "lambda"`)
}

// functionARN is a Lambda function's ARN, unqualified or with a version
// ($LATEST or a number) or an alias, in any partition: what IAM can grant
// one by one (the template's ToolFunctionArns), never a wildcard.
var functionARN = regexp.MustCompile(`^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(-[a-z]+)+-\d:\d{12}:function:[a-zA-Z0-9_-]{1,64}(:(\$LATEST|\d{1,10}|[a-zA-Z0-9_-]{1,128}))?$`)

func parseHTTPServer(name string, d serverDoc) (Server, error) {
	at := "servers." + name
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" || u.RawQuery != "" {
		return Server{}, invalid(at+".url", "must be an http(s) URL without credentials, query or fragment")
	}
	loopback := isLoopback(u.Hostname())
	if u.Scheme == "http" && !loopback {
		return Server{}, invalid(at+".url", "plain http is for loopback servers only; use https")
	}
	if d.Auth == nil {
		return Server{}, invalid(at+".auth", `is required ({"kind": "none"} for a loopback server)`)
	}
	a := Auth{Kind: d.Auth.Kind, Secret: d.Auth.Secret, TokenURL: d.Auth.TokenURL, ClientID: d.Auth.ClientID,
		ClientSecret: d.Auth.ClientSecret, Scopes: slices.Clone(d.Auth.Scopes)}
	switch a.Kind {
	case AuthNone:
		if !loopback {
			return Server{}, invalid(at+".auth.kind", "none is for loopback servers only")
		}
		if a.Secret != "" || a.TokenURL != "" || a.ClientID != "" || a.ClientSecret != "" || len(a.Scopes) > 0 {
			return Server{}, invalid(at+".auth", "none takes no other member")
		}
	case AuthBearer:
		if a.Secret == "" || a.TokenURL != "" || a.ClientID != "" || a.ClientSecret != "" || len(a.Scopes) > 0 {
			return Server{}, invalid(at+".auth", "bearer takes exactly secret (a Secrets Manager ARN or name)")
		}
	case AuthClientCredentials:
		tu, err := url.Parse(a.TokenURL)
		if err != nil || tu.Scheme != "https" && !(tu.Scheme == "http" && isLoopback(tu.Hostname())) || tu.Host == "" || tu.User != nil {
			return Server{}, invalid(at+".auth.token_url", "must be an https URL (http for loopback only)")
		}
		if a.ClientID == "" || a.ClientSecret == "" || a.Secret != "" {
			return Server{}, invalid(at+".auth", "oauth_client_credentials takes token_url, client_id, client_secret (a secret's name) and scopes")
		}
	default:
		return Server{}, invalid(at+".auth.kind", `must be "none", "bearer" or "oauth_client_credentials"`)
	}
	for field, v := range map[string]string{"secret": a.Secret, "client_secret": a.ClientSecret} {
		if n := strings.Count(v, FirmPlaceholder); n > 1 || (n == 0 && strings.ContainsAny(v, "{}")) {
			return Server{}, invalid(at+".auth."+field, "may hold "+FirmPlaceholder+" once (a secret per firm), and no other braces")
		}
	}
	return Server{Name: name, Kind: d.Kind, URL: d.URL, Auth: a, FinalClientErrors: d.FinalClientErrors}, nil
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "::1" || strings.HasPrefix(host, "127.")
}

func parseTool(name string, d toolDoc, servers map[string]Server) (Tool, error) {
	at := "tools." + name
	if !toolName.MatchString(name) {
		return Tool{}, invalid("tools", "a tool's name is 1 to 64 letters, digits, '_' or '-', starting with a letter")
	}
	if d.Description == "" || len(d.Description) > 4000 {
		return Tool{}, invalid(at+".description", "1 to 4000 bytes")
	}
	schema, hash, err := contracts.CanonicalInput(d.InputSchema)
	if err != nil || len(schema) == 0 || schema[0] != '{' {
		return Tool{}, invalid(at+".input_schema", "must be a JSON object")
	}
	if err := compiles(name, schema); err != nil {
		return Tool{}, &Error{Path: at + ".input_schema", Reason: "is not a JSON Schema this service can apply", Detail: err.Error()}
	}
	var top struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(schema, &top) != nil || top.Type != "object" {
		return Tool{}, invalid(at+".input_schema", `must describe an object ("type": "object")`)
	}
	var written bytes.Buffer
	if err := json.Compact(&written, d.InputSchema); err != nil {
		return Tool{}, invalid(at+".input_schema", "must be a JSON object")
	}
	if d.Title != "" && !TitleOK(d.Title) {
		return Tool{}, invalid(at+".title", fmt.Sprintf("1 to %d printable characters on one line, no leading or trailing space", maxTitle))
	}
	t := Tool{Name: name, Title: d.Title, Description: d.Description, InputSchema: schema, SchemaSHA256: hash, SchemaAsWritten: written.Bytes(),
		Summary: d.Summary, MatterField: d.MatterField, Class: d.Class, Timeout: DefaultTimeout}
	if t.summary, err = parseSummary(d.Summary); err != nil {
		e := *err.(*Error)
		e.Path = at + ".summary"
		return Tool{}, &e
	}
	if d.MatterField != "" && !validPointer(d.MatterField) {
		return Tool{}, invalid(at+".matter_field", `must be a JSON pointer to a member ("/matter_id")`)
	}
	switch d.Class {
	case ClassRead, ClassEffect:
	default:
		return Tool{}, invalid(at+".class", `must be "read" or "effect"`)
	}
	if d.Timeout != "" {
		if t.Timeout, err = time.ParseDuration(d.Timeout); err != nil || t.Timeout <= 0 || t.Timeout > MaxTimeout {
			return Tool{}, invalid(at+".timeout", "a duration of at most 5m (\"30s\")")
		}
	}
	tg := Target{Kind: d.Target.Kind, Server: d.Target.Server, Tool: d.Target.Tool, SchemaSHA256: d.Target.SchemaSHA256}
	switch tg.Kind {
	case TargetMCP, TargetLambda, TargetHTTPS:
		srv, ok := servers[tg.Server]
		if !ok {
			return Tool{}, invalid(at+".target.server", "names no server of the catalog")
		}
		if srv.Kind != tg.Kind {
			return Tool{}, invalid(at+".target.kind", "must be its server's kind, "+srv.Kind)
		}
		if tg.Tool == "" {
			tg.Tool = name
		}
		if len(tg.Tool) > 128 || strings.ContainsFunc(tg.Tool, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			return Tool{}, invalid(at+".target.tool", "at most 128 printable ASCII characters")
		}
		if tg.Kind == TargetHTTPS && !HTTPSPath(tg.Tool) {
			return Tool{}, invalid(at+".target.tool", `an https tool's path under its server's URL: segments of letters, digits, '-', '_', '.' and '~' joined by '/' ("filings", "v2/filings"), no "." or ".." segment`)
		}
		switch {
		case tg.Kind == TargetMCP && tg.SchemaSHA256 != hash:
			return Tool{}, invalid(at+".target.schema_sha256", "must pin the tool's input_schema: its hex SHA-256 (RFC 8785), "+hash)
		case tg.Kind != TargetMCP && tg.SchemaSHA256 != "":
			return Tool{}, invalid(at+".target.schema_sha256", "is for mcp tools only: a "+tg.Kind+" tool's schema is the catalog's own")
		}
	case TargetBuiltin:
		if tg.Server != "" || tg.Tool != "" || tg.SchemaSHA256 != "" {
			return Tool{}, invalid(at+".target", "a builtin target takes only its kind")
		}
	default:
		return Tool{}, invalid(at+".target.kind", `must be "mcp", "https", "lambda" or "builtin"`)
	}
	t.Target = tg
	return t, nil
}

// HTTPSPath reports whether p is an https tool's path under its server's
// URL: plain segments of RFC 3986 unreserved characters joined by '/', so
// it cannot leave the server's path (no "." or ".." segment, no "//host",
// no escapes, no query). pkg/httpstarget holds a call to the same rule.
func HTTPSPath(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
				return false
			}
		}
	}
	return true
}

func compiles(name string, schema []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(name+".json", doc); err != nil {
		return err
	}
	_, err = c.Compile(name + ".json")
	return err
}

// validPointer accepts RFC 6901 pointers to members ("/a", "/a/b"): no
// array indexes, no empty tokens.
func validPointer(p string) bool {
	if !strings.HasPrefix(p, "/") || len(p) > 256 {
		return false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool { return r < 0x20 }) {
			return false
		}
	}
	return true
}

// Pointer is the unescaped member names of a valid JSON pointer.
func Pointer(p string) []string {
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// Names are the catalog's tool names, sorted.
func (c *Catalog) Names() []string { return sortedKeys(c.Tools) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Error is a catalog or agents document that does not load: Path names the
// place, Reason what is wrong (never a value of the document). Detail is
// what a library said of it (a schema that does not compile), which may
// quote the document: for the operator's terminal, never for a log on AWS.
type Error struct{ Path, Reason, Detail string }

func (e *Error) Error() string {
	if e.Detail != "" {
		return "catalog: " + e.Path + ": " + e.Reason + ": " + e.Detail
	}
	return "catalog: " + e.Path + ": " + e.Reason
}

func invalid(path, reason string) error { return &Error{Path: path, Reason: reason} }

// OnServer is the embedded catalog with every builtin tool moved onto one
// server of the firm's (its name, kind and how it is reached), an MCP
// server's tools each pinned to its schema: the reference tools reached as
// a firm's tools are, through their MCP server, HTTPS endpoint or Lambda
// function (cmd/toolserver, cmd/toolfn on the local stack, and the tests).
func OnServer(server Server) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(embeddedCatalog, &doc); err != nil {
		return nil, err
	}
	tools, _ := doc["tools"].(map[string]any)
	for name, v := range tools {
		t, _ := v.(map[string]any)
		target := map[string]any{"kind": server.Kind, "server": server.Name, "tool": name}
		if server.Kind == TargetMCP {
			schema, err := json.Marshal(t["input_schema"])
			if err != nil {
				return nil, err
			}
			_, pin, err := contracts.CanonicalInput(schema)
			if err != nil {
				return nil, fmt.Errorf("catalog: tool %s: %w", name, err)
			}
			target["schema_sha256"] = pin
		}
		t["target"] = target
	}
	sd := serverDoc{Kind: server.Kind, URL: server.URL, Function: server.Function, FinalClientErrors: server.FinalClientErrors}
	if server.Kind != TargetLambda {
		sd.Auth = &authDoc{Kind: server.Auth.Kind, Secret: server.Auth.Secret, TokenURL: server.Auth.TokenURL, ClientID: server.Auth.ClientID,
			ClientSecret: server.Auth.ClientSecret, Scopes: server.Auth.Scopes}
	}
	doc["servers"] = map[string]any{server.Name: sd}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := Parse(b); err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
