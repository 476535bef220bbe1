package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// toSet marks each member of an imported entry the user must decide. Every
// placeholder starts with it, and each is a value the catalog refuses with
// an error naming its member (summary: not a template, since TO_SET is no
// function of it; matter_field: not a JSON pointer; class: not read or
// effect; timeout: not a duration), so an entry nobody finished never
// loads, and no class is ever guessed.
const toSet = "{{TO_SET}}"

// The placeholders, in the catalog's words.
var placeholders = struct{ summary, matterField, class, timeout string }{
	summary:     toSet + " the one line counsel reads about a call: a Go template over the input's members, e.g. File {{quote .title}} with {{.court}}.",
	matterField: toSet + " the JSON pointer of the input member that carries the matter, e.g. /matter_id; remove this member if the tool takes no matter",
	class:       toSet + " read (changes nothing; tried again when its answer is lost) or effect (may change the world; runs once, never retried)",
	timeout:     toSet + " how long one call may take, a Go duration of at most 5m, e.g. 30s",
}

// The catalog's wire form, in the order its documents are written
// (docs/examples/new-tool/catalog.json). pkg/catalog decodes it strictly,
// so a member spelled otherwise here would fail importSelfCheck, not load
// wrongly.
type (
	importDoc struct {
		Servers map[string]importServer `json:"servers"`
		Tools   map[string]importTool   `json:"tools"`
	}
	importServer struct {
		Kind string     `json:"kind"`
		URL  string     `json:"url"`
		Auth importAuth `json:"auth"`
	}
	importAuth struct {
		Kind         string   `json:"kind"`
		Secret       string   `json:"secret,omitempty"`
		TokenURL     string   `json:"token_url,omitempty"`
		ClientID     string   `json:"client_id,omitempty"`
		ClientSecret string   `json:"client_secret,omitempty"`
		Scopes       []string `json:"scopes,omitempty"`
	}
	importTool struct {
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Summary     string          `json:"summary"`
		MatterField string          `json:"matter_field,omitempty"`
		Class       string          `json:"class"`
		Timeout     string          `json:"timeout,omitempty"`
		Target      importTarget    `json:"target"`
	}
	importTarget struct {
		Kind         string `json:"kind"`
		Server       string `json:"server"`
		Tool         string `json:"tool"`
		SchemaSHA256 string `json:"schema_sha256"`
	}
)

// catalogName is the catalog's rule for a tool's and a server's name.
var catalogName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

// maxDescription is the catalog's bound on a description, in bytes.
const maxDescription = 4000

// toolsImportCmd reaches an MCP server as tools check does and prints its
// tools (or the one --tool names) as a catalog document: the server's
// entry as the flags give it, and for each tool the server's description
// and input schema, its pin (the hash pkg/mcp computes, which the loader
// and tools check hold the entry to) and a toSet placeholder in each member
// the user decides. Notes for the user, the server's untrusted hints among
// them, go to stderr. A tool whose schema the catalog cannot take is left
// out, named on stderr, and makes the exit status 1.
func toolsImportCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tools import")
	serverURL := fs.String("server", "", "the MCP server's `URL` (required)")
	only := fs.String("tool", "", "import only the server's tool `NAME`")
	as := fs.String("as", "", "the catalog's `NAME` for --tool (default: its name on the server)")
	name := fs.String("name", "", "the server's `NAME` in the catalog (default: the first label of its host name, or server)")
	authKind := fs.String("auth", catalog.AuthNone, "how to authenticate: none (loopback only), bearer or oauth_client_credentials")
	secret := fs.String("secret", "", "bearer: the Secrets Manager `SECRET` (name or ARN) holding the token")
	tokenURL := fs.String("token-url", "", "oauth_client_credentials: the token endpoint's `URL`")
	clientID := fs.String("client-id", "", "oauth_client_credentials: the client's `ID`")
	clientSecret := fs.String("client-secret", "", "oauth_client_credentials: the Secrets Manager `SECRET` holding the client secret")
	var scopes []string
	fs.Func("scope", "oauth_client_credentials: a `SCOPE` to ask for (repeat for more)", func(s string) error {
		scopes = append(scopes, s)
		return nil
	})
	timeout := fs.Duration("timeout", 20*time.Second, "how long the server has to answer")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0 || *serverURL == "":
		return usageErr("tools import takes --server URL [--tool NAME [--as NAME]] [--name NAME] [--auth KIND ...]")
	case *as != "" && *only == "":
		return usageErr("--as names the one tool --tool imports")
	case *as != "" && !catalogName.MatchString(*as):
		return usageErr("--as: a tool's name in the catalog is 1 to 64 letters, digits, '_' or '-', starting with a letter")
	}
	if *name == "" {
		*name = defaultServerName(*serverURL)
	}
	if !catalogName.MatchString(*name) {
		return usageErr("--name: a server's name in the catalog is 1 to 64 letters, digits, '_' or '-', starting with a letter")
	}
	sd := importServer{Kind: catalog.TargetMCP, URL: *serverURL, Auth: importAuth{Kind: *authKind, Secret: *secret,
		TokenURL: *tokenURL, ClientID: *clientID, ClientSecret: *clientSecret, Scopes: scopes}}
	srv, err := importedServer(*name, sd)
	if err != nil {
		return err
	}

	w := &importWatch{tokenURL: srv.Auth.TokenURL}
	var sm mcp.Secrets
	if srv.Auth.Kind != catalog.AuthNone {
		w.secrets = awsSecrets()
		sm = w
	}
	offered, err := reachServer(srv, sm, &http.Client{Transport: w.wrap(nil)}, *timeout)
	if err != nil {
		return w.explain(srv, err)
	}
	names := sortedNames(offered)
	if *only != "" {
		if _, ok := offered[*only]; !ok {
			// The server's names, made printable: they are its words.
			have := "none"
			if len(names) > 0 {
				have = contracts.Printable(strings.Join(names, ", "))
			}
			return fmt.Errorf("the server at %s offers no tool %q; it offers: %s", srv.URL, *only, have)
		}
		names = []string{*only}
	}
	if len(names) == 0 {
		return fmt.Errorf("the server at %s offers no tools", srv.URL)
	}

	doc := importDoc{Servers: map[string]importServer{srv.Name: sd}, Tools: map[string]importTool{}}
	from := map[string]string{} // catalog name -> the server's
	var skipped []string
	for _, remoteName := range names {
		rt := offered[remoteName]
		cname := *as
		if cname == "" {
			cname = toolName(remoteName)
		}
		if prev, ok := from[cname]; ok {
			return fmt.Errorf("the server's tools %q and %q would both be %s in the catalog: import them one at a time with --tool and --as", prev, remoteName, cname)
		}
		entry := importTool{Description: rt.Description, InputSchema: rt.InputSchema, Summary: placeholders.summary,
			MatterField: placeholders.matterField, Class: placeholders.class, Timeout: placeholders.timeout,
			Target: importTarget{Kind: catalog.TargetMCP, Server: srv.Name, Tool: remoteName, SchemaSHA256: rt.SchemaSHA256}}
		if len(rt.InputSchema) == 0 {
			skipped = append(skipped, fmt.Sprintf("%q: the server lists it twice, or its input schema is not JSON that has one canonical form; nothing can pin it", remoteName))
			continue
		}
		switch {
		case catalog.TitleOK(rt.Title):
			entry.Title = rt.Title // the desk shows it for the name
		case rt.Title != "":
			fmt.Fprintf(stderr, "tools import: %s: the server's title is not one the catalog takes (1 to 80 printable characters on one line): left out\n", cname)
		}
		if n := len(rt.Description); n == 0 || n > maxDescription {
			// The catalog refuses an empty description: the user writes one.
			entry.Description = ""
			fmt.Fprintf(stderr, "tools import: %s: the server's description is %d bytes (the catalog takes 1 to %d): write one\n", cname, n, maxDescription)
		}
		if err := importSelfCheck(sd, srv.Name, cname, entry); err != nil {
			skipped = append(skipped, fmt.Sprintf("%q: the catalog could not take it: %v", remoteName, err))
			continue
		}
		doc.Tools[cname] = entry
		from[cname] = remoteName
		fmt.Fprintf(stderr, "tools import: %s (%s on %s): input schema pinned, sha256 %s\n", cname, contracts.Printable(remoteName), srv.Name, rt.SchemaSHA256)
		if len(rt.Annotations) > 0 {
			fmt.Fprintf(stderr, "tools import: %s: the server's hints, not trusted and not used (the class is yours to set): %s\n", cname, compactJSON(rt.Annotations))
		}
	}
	if len(doc.Tools) > 0 {
		if err := writeImport(stdout, doc); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "tools import: set each %s member (summary, matter_field, class, timeout) of the %d tool(s) above; the catalog refuses them until then. "+
			"Each description is the server's own words, which the model reads: review it. Then add each tool to the risk policy and run tools check.\n", toSet, len(doc.Tools))
	}
	if len(skipped) > 0 {
		return fmt.Errorf("left out %d tool(s):\n  %s", len(skipped), strings.Join(skipped, "\n  "))
	}
	return nil
}

// importedServer checks the server's entry with the catalog's own rules
// (and the target's, which are pkg/remote's) before anything is reached,
// naming the flag at fault.
func importedServer(name string, sd importServer) (catalog.Server, error) {
	// A builtin tool stands in for the tools not listed yet: the catalog
	// loads no document without one.
	probe := map[string]any{
		"servers": map[string]importServer{name: sd},
		"tools": map[string]any{"probe": map[string]any{"description": "probe", "input_schema": map[string]any{"type": "object"},
			"summary": "probe", "class": "read", "target": map[string]any{"kind": catalog.TargetBuiltin}}},
	}
	b, err := json.Marshal(probe)
	if err != nil {
		return catalog.Server{}, err
	}
	c, err := catalog.Parse(b)
	if err != nil {
		var ce *catalog.Error
		if errors.As(err, &ce) {
			member := strings.TrimPrefix(ce.Path, "servers."+name)
			if member == ".auth" {
				return catalog.Server{}, usageErr("%s", authFlags[sd.Auth.Kind])
			}
			return catalog.Server{}, usageErr("%s: %s", flagOf(member), ce.Reason)
		}
		return catalog.Server{}, err
	}
	srv := c.Servers[name]
	if srv.PerFirm() {
		return catalog.Server{}, usageErr("%s names a secret per firm: import with one firm's secret, then put it back in the printed server entry", catalog.FirmPlaceholder)
	}
	t, err := mcp.New(mcpConfig(srv, secretsUnavailable{}, nil))
	if err != nil {
		return catalog.Server{}, usageErr("--server: %v", err)
	}
	return srv, t.Close()
}

// authFlags says, in flags, what each auth kind takes (the catalog's
// "auth" member, in its words, is at fault).
var authFlags = map[string]string{
	catalog.AuthNone:              "--auth none takes no other auth flag",
	catalog.AuthBearer:            "--auth bearer takes --secret SECRET (a Secrets Manager secret's name or ARN) and no other auth flag",
	catalog.AuthClientCredentials: "--auth oauth_client_credentials takes --token-url URL, --client-id ID, --client-secret SECRET and --scope SCOPE..., and not --secret",
}

// flagOf is the flag that set a server entry's member (a catalog error's
// path under the server).
func flagOf(member string) string {
	switch member {
	case ".url":
		return "--server"
	case ".auth.kind":
		return "--auth"
	case ".auth.secret":
		return "--secret"
	case ".auth.token_url":
		return "--token-url"
	case ".auth.client_secret":
		return "--client-secret"
	}
	return "--server"
}

// importSelfCheck loads the entry, its placeholders set to values the
// catalog takes, on its own with its server: what the user gets once the
// fields are set, or why the catalog would refuse the server's tool
// whatever they set (a schema it cannot apply, a name it cannot call).
func importSelfCheck(sd importServer, server, name string, entry importTool) error {
	entry.Summary, entry.MatterField, entry.Class, entry.Timeout = "Call the tool.", "", string(catalog.ClassEffect), ""
	if entry.Description == "" {
		entry.Description = "A tool."
	}
	b, err := json.Marshal(importDoc{Servers: map[string]importServer{server: sd}, Tools: map[string]importTool{name: entry}})
	if err != nil {
		return err
	}
	_, err = catalog.Parse(b)
	return err
}

// defaultServerName is the first label of the URL's host name when the
// catalog takes it as a name ("dms" for dms.firm.example), else "server".
func defaultServerName(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		label, _, _ := strings.Cut(u.Hostname(), ".")
		if catalogName.MatchString(label) && label != "localhost" {
			return label
		}
	}
	return "server"
}

// toolName is the catalog's name for a server's tool: the same name when
// the catalog takes it, else it with each other character made '_', a
// letter put first and cut at 64 (target.tool keeps the server's).
func toolName(remote string) string {
	if catalogName.MatchString(remote) {
		return remote
	}
	b := []byte(remote)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "t_" + s
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// writeImport prints the document indented, with <, > and & as they are
// (a schema's pattern stays readable; its pin is of the canonical form).
func writeImport(w io.Writer, doc importDoc) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// importWatch sees what a failed listing could not say in its error (which
// keeps only the target's words): whether the secret could be read, and
// what the server and the token endpoint answered, so an auth failure is
// told from a server that is not there. It reads statuses only, never a
// body or a header's value.
type importWatch struct {
	tokenURL string
	secrets  mcp.Secrets

	mu          sync.Mutex
	secretErr   error
	secretID    string
	refused     int // the server's 401 or 403
	tokenStatus int // the token endpoint's answer, when not 2xx
}

// GetSecret reads through the configured secrets, noting a failure.
func (w *importWatch) GetSecret(ctx context.Context, id string) (string, error) {
	v, err := w.secrets.GetSecret(ctx, id)
	if err != nil {
		w.mu.Lock()
		if w.secretErr == nil {
			w.secretErr, w.secretID = err, id
		}
		w.mu.Unlock()
	}
	return v, err
}

// wrap is base (nil: the targets' default transport) with the watch on
// what it carries.
func (w *importWatch) wrap(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = remote.DefaultTransport()
	}
	token, _ := url.Parse(w.tokenURL)
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		w.mu.Lock()
		switch {
		case w.tokenURL != "" && token != nil && remote.SameOrigin(req.URL, token) && req.URL.Path == token.Path:
			if resp.StatusCode/100 != 2 {
				w.tokenStatus = resp.StatusCode
			}
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			w.refused = resp.StatusCode
		}
		w.mu.Unlock()
		return resp, err
	})
}

// explain words a failed listing: an auth failure when the watch saw one,
// else a server that could not be reached or did not list its tools.
func (w *importWatch) explain(srv catalog.Server, err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.secretErr != nil:
		return fmt.Errorf("auth failed: could not read secret %q (AWS Secrets Manager, with the usual AWS configuration): %v", w.secretID, w.secretErr)
	case w.tokenStatus != 0:
		return fmt.Errorf("auth failed: the token endpoint %s refused the client credentials (HTTP %d): check --client-id and the secret --client-secret names", srv.Auth.TokenURL, w.tokenStatus)
	case w.refused != 0 && srv.Auth.Kind == catalog.AuthNone:
		return fmt.Errorf("auth failed: the server asks for credentials (HTTP %d): give them with --auth bearer --secret SECRET or --auth oauth_client_credentials ...", w.refused)
	case w.refused != 0:
		return fmt.Errorf("auth failed: the server refused the credentials (HTTP %d): check the secret's value and that the server accepts it", w.refused)
	}
	return fmt.Errorf("could not reach the server at %s, or it did not list its tools: %v", srv.URL, err)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
