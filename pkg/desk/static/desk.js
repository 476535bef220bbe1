/*
 * The counsel's desk: the page counsel decide warrants on.
 *
 * A classic deferred script (no modules, no build step, no third-party code).
 * The page is served with a strict Content-Security-Policy, so this file:
 *   - builds every node with createElement and textContent (never innerHTML
 *     or friends): everything the server sends is untrusted text;
 *   - never sets inline styles (classes and the `hidden` attribute only);
 *   - keeps the sign-in token in a variable of this closure: never in
 *     localStorage, sessionStorage or a cookie. Only the PKCE verifier and
 *     state (not tokens) cross the OIDC redirect in sessionStorage, and are
 *     removed as soon as they are read.
 * Navigation uses the URL hash (#/ the desk, #/runs/<run_id> a run), so the
 * in-memory token survives it.
 */
'use strict';

(() => {
  // ---------------------------------------------------------------------
  // Constants
  // ---------------------------------------------------------------------

  /**
   * The API's base path: what precedes "/desk" in the page's own path, so
   * the desk works under an API Gateway stage (https://host/prod/desk
   * calls https://host/prod/v1/...). The page is served at <base>/desk.
   */
  const BASE = location.pathname.replace(/\/desk\/?$/, '');
  const DESK_PATH = `${BASE}/desk`;
  const CONFIG_URL = `${BASE}/desk/config.json`;
  const PKCE_KEY = 'warrant.desk.pkce';
  const NOTE_MAX = 2000;
  const LONG_POLL_SECONDS = 20;
  /** How long a run page keeps following a run that still reads "held" right after this page resumed it. */
  const HELD_GRACE_MS = 30_000;
  /** The countdowns tick every second, so a warrant's buttons lock the moment it reads "expired". */
  const EXPIRY_TICK_MS = 1000;
  /** How often the list looks for warrants that arrived or went (see refreshInterval). */
  const LIST_REFRESH_MS = 30_000;
  /** A warrant this close to its expiry stands out on the desk. */
  const EXPIRING_SOON_MS = 60 * 60_000;
  /**
   * How long a run page waits before each new look at a run's receipts
   * while no checkpoint covers them yet (the sweeper signs the firm log's
   * checkpoint every minute; locally every few seconds): about 2.5 min in
   * all, then Refresh looks again.
   */
  const RECEIPTS_RETRY_MS = [2000, 3000, 5000, 10_000, 15_000, 30_000, 30_000, 60_000];
  const TERMINAL = new Set(['completed', 'failed', 'aborted']);
  const TIERS = new Set(['low', 'medium', 'high', 'prohibited']);
  const STATUS_TITLES = {
    400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found',
    405: 'Method Not Allowed', 408: 'Request Timeout', 409: 'Conflict', 410: 'Gone',
    413: 'Content Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Content',
    429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway',
    503: 'Service Unavailable', 504: 'Gateway Timeout',
  };

  // ---------------------------------------------------------------------
  // State (memory only)
  // ---------------------------------------------------------------------

  /** The sign-in configuration from /desk/config.json. */
  let config = null;

  /**
   * Who is signed in, or null.
   *   OIDC: {kind: 'oidc', token, user, roles: string[]}
   *   dev:  {kind: 'dev', firmId, userId, name, rolesHeader, user, roles: string[]}
   * user is what the page shows: the display name when there is one.
   */
  let session = null;

  /** The view on screen: its abort signal and timers (see newView). */
  let current = null;

  /** run_id -> approval_request_id this page has just resumed the run under. */
  const justResumed = new Map();

  /** Notes counsel typed, by approval_request_id, kept across a refresh of the list. */
  const draftNotes = new Map();

  /** The desk's filters (matter_id, risk tier; "" is all), kept across a refresh and a visit to a run. */
  const listFilter = { matter: '', tier: '' };

  const app = document.getElementById('app');

  // ---------------------------------------------------------------------
  // DOM helpers
  // ---------------------------------------------------------------------

  /**
   * Creates an element. opts: class, text, on {event: fn}, disabled, hidden,
   * and any other key as an attribute (null/undefined/false skipped).
   * Children: nodes or strings (as text), null/false skipped.
   */
  function h(tag, opts = {}, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(opts)) {
      if (value === null || value === undefined || value === false) continue;
      switch (key) {
        case 'class': el.className = value; break;
        case 'text': el.textContent = String(value); break;
        case 'on':
          for (const [type, fn] of Object.entries(value)) el.addEventListener(type, fn);
          break;
        case 'disabled': el.disabled = Boolean(value); break;
        case 'hidden': el.hidden = Boolean(value); break;
        default: el.setAttribute(key, value === true ? '' : String(value));
      }
    }
    appendAll(el, children);
    return el;
  }

  function appendAll(el, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  /** A labelled value: <div class="kv"><span class="label">label</span> value</div>. */
  function kv(label, valueEl, extraClass = '') {
    return h('div', { class: `kv ${extraClass}`.trim() }, h('span', { class: 'label', text: label }), ' ', valueEl);
  }

  function byId(id) { return document.getElementById(id); }

  // Characters not seen as themselves are made visible as ⟨U+XXXX⟩, so what
  // counsel reads is what the warrant covers: controls (but \t and \n),
  // format characters (bidi controls, zero-width characters, the soft
  // hyphen, tag characters), default-ignorables (Hangul fillers, variation
  // selectors) and the line and paragraph separators, which would otherwise
  // pass for newlines. INVISIBLE_RANGES comes from invisible.js, generated
  // from the table counsel's summaries are escaped by on the server
  // (contracts.InvisibleRanges); without it this script stops here and the
  // desk shows nothing to sign.
  const codePointEscape = (n) => `\\u{${n.toString(16)}}`;
  const HIDDEN_CHARS = new RegExp(`[${INVISIBLE_RANGES.map(([lo, hi]) =>
    (lo === hi ? codePointEscape(lo) : `${codePointEscape(lo)}-${codePointEscape(hi)}`)).join('')}]`, 'gu');

  function codePointLabel(ch) {
    return `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  }

  /** Appends text to el, with hidden characters as span.ctl "⟨U+XXXX⟩". Nothing is truncated. */
  function appendVisible(el, text) {
    const s = String(text);
    let last = 0;
    for (const m of s.matchAll(HIDDEN_CHARS)) {
      if (m.index > last) el.append(document.createTextNode(s.slice(last, m.index)));
      const label = codePointLabel(m[0]);
      el.append(h('span', { class: 'ctl', title: `invisible or control character ${label}`, text: `⟨${label}⟩` }));
      last = m.index + m[0].length;
    }
    if (last < s.length) el.append(document.createTextNode(s.slice(last)));
    return el;
  }

  /** A class-name-safe token of untrusted text (for tier-<x>, status-<x>). */
  function classToken(s) {
    const t = String(s ?? '').toLowerCase();
    return /^[a-z0-9_-]{1,32}$/.test(t) ? t : 'unknown';
  }

  function str(v, fallback = '') {
    return typeof v === 'string' ? v : (typeof v === 'number' || typeof v === 'boolean') ? String(v) : fallback;
  }

  // ---------------------------------------------------------------------
  // Errors
  // ---------------------------------------------------------------------

  /** An HTTP problem (or a network failure, status 0), shown in words. */
  class Problem extends Error {
    constructor({ status = 0, title = '', detail = '', kind = '', correlationId = '' } = {}) {
      super(detail || title || 'request failed');
      this.name = 'Problem';
      this.status = status;
      this.title = title;
      this.detail = detail;
      this.kind = kind;
      this.correlationId = correlationId;
    }

    /** Worth trying again: the network, a timeout, throttling or the server. */
    get retryable() {
      return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
    }

    /** "<status> <title>: <detail>", e.g. "409 Conflict: the warrant is not pending". */
    get text() {
      const head = this.status ? `${this.status} ${this.title || STATUS_TITLES[this.status] || 'Error'}` : (this.title || 'Network error');
      return this.detail ? `${head}: ${this.detail}` : head;
    }
  }

  function isAbort(err) {
    return err instanceof DOMException && err.name === 'AbortError';
  }

  /** Words for any error: a Problem's text, else the message. */
  function errorText(err) {
    if (err instanceof Problem) return err.text;
    if (err instanceof Error) return err.message;
    return String(err);
  }

  /** Shows text in the page's #error region (role=alert); empty text hides it. */
  function setError(text) {
    const el = byId('error');
    if (!el) return;
    el.textContent = text || '';
    el.hidden = !text;
  }

  /** Shows an error in #error, with a hint to sign in again on a 401. */
  function showError(err) {
    if (isAbort(err)) return;
    let text = errorText(err);
    if (err instanceof Problem && err.status === 401 && session) {
      text += ' — your sign-in was not accepted; sign out and sign in again.';
    }
    setError(text);
  }

  // ---------------------------------------------------------------------
  // Encoding helpers
  // ---------------------------------------------------------------------

  function randomBytes(n) {
    return crypto.getRandomValues(new Uint8Array(n));
  }

  function base64url(bytes) {
    let bin = '';
    for (const b of bytes) bin += String.fromCharCode(b);
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  function base64urlDecode(s) {
    const b64 = s.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(s.length / 4) * 4, '=');
    const bin = atob(b64);
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  }

  async function sha256(bytes) {
    if (!globalThis.crypto?.subtle) {
      throw new Error('this browser offers no Web Crypto here (the desk needs HTTPS)');
    }
    return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  }

  function hex(bytes) {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  /** SHA-256 of the UTF-8 bytes of a string, as lowercase hex. */
  async function sha256HexOfText(text) {
    return hex(await sha256(new TextEncoder().encode(text)));
  }

  /**
   * The payload of a JWT, for display only: it is not verified here (the
   * API's authorizer verifies every call). Anything unreadable is {}.
   */
  function jwtClaims(token) {
    try {
      const parts = String(token).split('.');
      if (parts.length < 2) return {};
      const claims = JSON.parse(new TextDecoder().decode(base64urlDecode(parts[1])));
      return claims && typeof claims === 'object' && !Array.isArray(claims) ? claims : {};
    } catch {
      return {};
    }
  }

  /**
   * Roles from a claim or header. An array (a token's claim, or a JSON
   * array in a string) is exact: each element is one role as it is, so the
   * title "associate counsel" is not counsel, as the API reads it. Only a
   * dev header's plain text ("[counsel associate]", "counsel associate",
   * "counsel, associate") is split.
   */
  function parseRoles(value) {
    let roles = [];
    if (Array.isArray(value)) {
      roles = value.filter((v) => typeof v === 'string' && v !== '');
    } else if (typeof value === 'string') {
      let s = value.trim();
      if (s.startsWith('[') && s.endsWith(']')) {
        try {
          const list = JSON.parse(s);
          if (Array.isArray(list)) return parseRoles(list);
        } catch { /* not JSON: "[counsel associate]" */ }
        s = s.slice(1, -1);
      }
      roles = s.split(/[\s,]+/).map((r) => r.replace(/^["']+|["']+$/g, '')).filter(Boolean);
    }
    return [...new Set(roles)];
  }

  function isCounsel() {
    return Boolean(session?.roles.includes('counsel'));
  }

  // ---------------------------------------------------------------------
  // HTTP
  // ---------------------------------------------------------------------

  /** The identity headers of every API call. */
  function authHeaders() {
    if (!session) return {};
    if (session.kind === 'oidc') return { Authorization: `Bearer ${session.token}` };
    const headers = { 'X-Dev-Firm': session.firmId, 'X-Dev-User': session.userId, 'X-Dev-Roles': session.rolesHeader };
    if (session.name) headers['X-Dev-Name'] = session.name;
    return headers;
  }

  /** A Problem from a non-2xx answer: problem+json when it is one, else the status and the start of the body. */
  async function problemFrom(res) {
    let body = null;
    let text = '';
    try {
      text = await res.text();
      body = JSON.parse(text);
    } catch { /* not JSON */ }
    if (body && typeof body === 'object' && !Array.isArray(body)) {
      return new Problem({
        status: res.status,
        title: str(body.title) || STATUS_TITLES[res.status] || res.statusText,
        detail: str(body.detail),
        kind: str(body.kind),
        correlationId: str(body.correlation_id) || res.headers.get('X-Correlation-Id') || '',
      });
    }
    const snippet = text.trim().replace(/\s+/g, ' ');
    return new Problem({
      status: res.status,
      title: STATUS_TITLES[res.status] || res.statusText || 'Error',
      detail: snippet.length > 300 ? `${snippet.slice(0, 300)}…` : snippet,
      correlationId: res.headers.get('X-Correlation-Id') || '',
    });
  }

  /**
   * Calls the API (same origin). Resolves to {status, headers, data} on a
   * 2xx (data: parsed JSON, or the text when raw); throws a Problem on any
   * other answer or a network failure (status 0), and an AbortError when
   * signal aborts.
   */
  async function api(path, { method = 'GET', body, signal, raw = false, accept = 'application/json' } = {}) {
    const headers = { Accept: accept, ...authHeaders() };
    const init = { method, headers, signal, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(BASE + path, init);
    } catch (err) {
      if (isAbort(err)) throw err;
      throw new Problem({ title: 'Network error', detail: `${method} ${path} did not reach the API (${errorText(err)})` });
    }
    if (!res.ok) throw await problemFrom(res);
    let data = null;
    try {
      if (raw) {
        data = await res.text();
      } else if (res.status !== 204) {
        const text = await res.text();
        data = text ? JSON.parse(text) : null;
      }
    } catch (err) {
      if (isAbort(err)) throw err;
      throw new Problem({ status: res.status, title: 'Unreadable answer', detail: `${method} ${path}: ${errorText(err)}` });
    }
    return { status: res.status, headers: res.headers, data };
  }

  function enc(s) { return encodeURIComponent(s); }

  // ---------------------------------------------------------------------
  // Sign-in
  // ---------------------------------------------------------------------

  function redirectUri() {
    return location.origin + DESK_PATH;
  }

  /** An absolute https URL (http on the loopback host, for local issuers), or an Error. */
  function checkedUrl(raw, what) {
    let u;
    try {
      u = new URL(String(raw));
    } catch {
      throw new Error(`The desk's sign-in configuration has no valid ${what}.`);
    }
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) {
      throw new Error(`The desk's sign-in configuration names a ${what} that is not https.`);
    }
    return u;
  }

  /** Starts the OIDC authorization code flow with PKCE (S256). */
  async function startOidcSignIn() {
    const authorize = checkedUrl(config.authorize_url, 'authorization endpoint');
    const verifier = base64url(randomBytes(32));
    const challenge = base64url(await sha256(new TextEncoder().encode(verifier)));
    const state = base64url(randomBytes(16));
    // The page counsel was sent to (a notification's link to a warrant):
    // the identity provider drops the hash, so it is kept to go back to.
    const back = /^#\/[A-Za-z0-9/_.~%-]*$/.test(location.hash) ? location.hash : '';
    sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, back }));
    const params = new URLSearchParams({
      response_type: 'code',
      client_id: str(config.client_id),
      redirect_uri: redirectUri(),
      scope: str(config.scope) || 'openid',
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const base = authorize.href;
    location.assign(base + (base.includes('?') ? '&' : '?') + params.toString());
  }

  /** Reads and at once removes the PKCE verifier and state kept across the redirect. */
  function takePkce() {
    let stored = null;
    try {
      stored = JSON.parse(sessionStorage.getItem(PKCE_KEY) || 'null');
    } catch { /* unreadable: treated as absent */ }
    sessionStorage.removeItem(PKCE_KEY);
    return stored && typeof stored === 'object' ? stored : null;
  }

  /** Drops the OIDC query (code, state, error) from the address bar. */
  function dropQuery() {
    history.replaceState(null, '', DESK_PATH + location.hash);
  }

  /**
   * Finishes an OIDC redirect, if this load is one: exchanges the code for
   * a token (kept in memory) or throws the identity provider's error.
   * Returns true when counsel is now signed in.
   */
  async function finishOidcRedirect() {
    const q = new URLSearchParams(location.search);
    if (!q.has('code') && !q.has('state') && !q.has('error')) return false;
    const stored = takePkce();
    const code = q.get('code');
    const state = q.get('state');
    const error = q.get('error');
    const errorDescription = q.get('error_description');
    dropQuery(); // the code is single-use; keep it out of the address bar and history

    if (error) {
      throw new Error(`Sign-in failed: ${error}${errorDescription ? ` — ${errorDescription}` : ''}`);
    }
    if (config.auth !== 'oidc') {
      throw new Error('Sign-in failed: this deployment does not sign in with an identity provider.');
    }
    if (!code || !state) {
      throw new Error('Sign-in failed: the identity provider answered without a code and state.');
    }
    if (!stored || typeof stored.state !== 'string' || stored.state !== state || typeof stored.verifier !== 'string') {
      throw new Error('Sign-in failed: the answer does not match a sign-in this browser started (state mismatch). Sign in again.');
    }
    if (typeof stored.back === 'string' && /^#\/[A-Za-z0-9/_.~%-]*$/.test(stored.back)) {
      history.replaceState(null, '', DESK_PATH + stored.back);
    }

    const tokenUrl = checkedUrl(config.token_url, 'token endpoint');
    let res;
    try {
      res = await fetch(tokenUrl.href, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: redirectUri(),
          client_id: str(config.client_id),
          code_verifier: stored.verifier,
        }).toString(),
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (err) {
      throw new Error(`Sign-in failed: the token endpoint could not be reached (${errorText(err)}).`);
    }
    let body = null;
    try { body = await res.json(); } catch { /* not JSON */ }
    if (!res.ok) {
      const why = body && typeof body === 'object'
        ? [str(body.error), str(body.error_description)].filter(Boolean).join(' — ')
        : '';
      throw new Error(`Sign-in failed: the token endpoint answered ${res.status}${why ? `: ${why}` : ''}.`);
    }
    const token = str(body?.access_token) || str(body?.id_token);
    if (!token) throw new Error('Sign-in failed: the token endpoint answered without a token.');

    // For display only: who and which roles (the API verifies the token).
    const claims = jwtClaims(token);
    const idClaims = body?.id_token ? jwtClaims(body.id_token) : {};
    const rolesClaim = str(config.roles_claim) || 'roles';
    session = {
      kind: 'oidc',
      token,
      user: str(claims.name) || str(idClaims.name) || str(claims.email) || str(idClaims.email) || str(claims.sub) || str(idClaims.sub) || 'signed in',
      roles: parseRoles(claims[rolesClaim] ?? idClaims[rolesClaim]),
    };
    return true;
  }

  /** A header value must be printable ASCII (fetch refuses anything else). */
  function headerSafe(s) {
    return /^[\x20-\x7E]*$/.test(s);
  }

  // ---------------------------------------------------------------------
  // Page shell
  // ---------------------------------------------------------------------

  /** Rebuilds the whole page: banner, header, #error, and an empty #view. */
  function renderShell() {
    const parts = [];
    if (config?.auth === 'dev') {
      parts.push(h('p', { id: 'dev-banner', class: 'dev-banner', text: 'Local development sign-in: no real authentication' }));
    }
    const bar = h('header', { class: 'topbar' }, h('p', { class: 'brand' }, 'The counsel\u2019s desk ', h('span', { class: 'brand-sub', text: 'Warrant' })));
    if (session) {
      const whoami = h('p', { id: 'whoami' },
        h('span', { class: 'who-user', text: session.user }), ' ',
        h('span', { class: 'who-roles', text: session.roles.length ? session.roles.join(', ') : 'no roles' }));
      const signout = h('button', { id: 'signout', type: 'button', class: 'secondary', text: 'Sign out', on: { click: signOut } });
      bar.append(h('div', { class: 'session' }, whoami, signout));
    }
    parts.push(bar);
    parts.push(h('p', { id: 'error', class: 'error', role: 'alert', hidden: true }));
    parts.push(h('div', { id: 'view' }));
    app.replaceChildren(...parts);
    return byId('view');
  }

  /** The sign-in screen, as the configuration asks. */
  function renderSignIn(errorMessage = '') {
    leaveView();
    const view = renderShell();
    const box = h('section', { class: 'signin card' }, h('h1', { text: 'Sign in to the counsel\u2019s desk', tabindex: '-1' }));
    view.append(box);

    switch (config?.auth) {
      case 'oidc': {
        const button = h('button', { id: 'signin', type: 'button', class: 'primary', text: 'Sign in' });
        button.addEventListener('click', async () => {
          button.disabled = true;
          setError('');
          try {
            await startOidcSignIn();
          } catch (err) {
            button.disabled = false;
            showError(err);
          }
        });
        box.append(h('p', { text: 'Counsel sign in with the firm\u2019s identity provider.' }), button);
        break;
      }
      case 'dev':
        box.append(devSignInForm());
        break;
      case 'none':
        box.append(h('p', { id: 'signin-unavailable', text: 'Sign-in is not configured for this deployment.' }));
        break;
      default:
        // No configuration (it failed to load: the error says why) or one this page does not know.
        if (config) {
          box.append(h('p', { id: 'signin-unavailable', text: 'Sign-in is not configured for this deployment.' }));
          errorMessage ||= 'The desk\u2019s sign-in configuration is not one this page knows.';
        }
    }
    if (errorMessage) setError(errorMessage);
  }

  /** LOCAL ONLY: the dev identities of the local stack, sent as X-Dev-* headers. */
  function devSignInForm() {
    const identities = Array.isArray(config.identities) ? config.identities.filter((i) => i && typeof i === 'object') : [];
    const select = h('select', { id: 'dev-identity', name: 'identity' },
      identities.map((ident, i) => h('option', { value: String(i), text: `${str(ident.label)} (${str(ident.roles)})` })));
    const user = h('input', { id: 'dev-user', name: 'user', type: 'text', autocomplete: 'off', spellcheck: 'false', required: true });
    const name = h('input', { id: 'dev-name', name: 'name', type: 'text', autocomplete: 'off', spellcheck: 'false' });
    const roles = h('input', { id: 'dev-roles', name: 'roles', type: 'text', autocomplete: 'off', spellcheck: 'false' });
    const fill = () => {
      const ident = identities[Number(select.value)];
      user.value = str(ident?.user_id);
      name.value = str(ident?.name);
      roles.value = str(ident?.roles);
    };
    select.addEventListener('change', fill);
    fill();

    const form = h('form', { id: 'dev-signin', class: 'stack', novalidate: true },
      h('p', { class: 'muted' }, 'Firm ', h('code', { text: str(config.firm_id) })),
      h('label', { for: 'dev-identity', text: 'Identity' }), select,
      h('label', { for: 'dev-user', text: 'User id' }), user,
      h('label', { for: 'dev-name', text: 'Display name (optional)' }), name,
      h('label', { for: 'dev-roles', text: 'Roles' }), roles,
      h('div', { class: 'actions' }, h('button', { id: 'dev-signin-submit', type: 'submit', class: 'primary', text: 'Sign in (local)' })));

    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const firmId = str(config.firm_id).trim();
      const userId = user.value.trim();
      const displayName = name.value.trim();
      const rolesHeader = roles.value.trim();
      if (!userId) {
        setError('Enter a user id.');
        return;
      }
      if (![firmId, userId, displayName, rolesHeader].every(headerSafe)) {
        setError('The firm, user, display name and roles must be plain ASCII text.');
        return;
      }
      session = { kind: 'dev', firmId, userId, name: displayName, rolesHeader, user: displayName || userId, roles: parseRoles(rolesHeader) };
      signedIn();
    });
    return form;
  }

  function signedIn() {
    renderShell();
    route();
  }

  function signOut() {
    session = null;
    justResumed.clear();
    draftNotes.clear();
    toolCatalog = null;
    listFilter.matter = '';
    listFilter.tier = '';
    history.replaceState(null, '', `${DESK_PATH}#/`);
    renderSignIn();
  }

  // ---------------------------------------------------------------------
  // Views and routing
  // ---------------------------------------------------------------------

  /** A view's lifetime: leaving it aborts its requests and clears its timers. */
  function newView() {
    const ctrl = new AbortController();
    const timers = new Set();
    const ctx = {
      signal: ctrl.signal,
      get alive() { return !ctrl.signal.aborted; },
      every(fn, ms) { timers.add(setInterval(fn, ms)); },
      leave() {
        ctrl.abort();
        for (const t of timers) clearInterval(t);
        timers.clear();
      },
    };
    return ctx;
  }

  function leaveView() {
    current?.leave();
    current = null;
  }

  /** Waits ms, or rejects with an AbortError when the view is left. */
  function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new DOMException('left the view', 'AbortError'));
      const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, ms);
      function onAbort() {
        clearTimeout(t);
        reject(new DOMException('left the view', 'AbortError'));
      }
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  function parseRoute() {
    // A notification's link: the run's warrant, on the desk.
    const w = /^#\/runs\/([^/?#]+)\/warrants\/([^/?#]+)\/?$/.exec(location.hash);
    if (w) {
      try {
        return { name: 'warrant', runId: decodeURIComponent(w[1]), approvalId: decodeURIComponent(w[2]) };
      } catch { /* malformed escape: the desk */ }
    }
    const m = /^#\/runs\/([^/?#]+)\/?$/.exec(location.hash);
    if (m) {
      try {
        return { name: 'run', runId: decodeURIComponent(m[1]) };
      } catch { /* malformed escape: the desk */ }
    }
    return { name: 'desk' };
  }

  function runHash(runId) {
    return `#/runs/${enc(runId)}`;
  }

  /** Shows the view the hash names (signed in only). */
  function route() {
    if (!session) return;
    leaveView();
    setError('');
    const view = byId('view') || renderShell();
    view.replaceChildren();
    current = newView();
    const r = parseRoute();
    if (r.name === 'run') {
      renderRun(view, r.runId, current);
    } else {
      renderDesk(view, current, r.name === 'warrant' ? r : null);
    }
    if (r.name !== 'warrant') view.querySelector('h1')?.focus({ preventScroll: true });
  }

  window.addEventListener('hashchange', route);

  // ---------------------------------------------------------------------
  // The desk: pending warrants
  // ---------------------------------------------------------------------

  /**
   * Matter names by matter_id (GET /v1/matters answers counsel and firm
   * admins only), or null when the registry cannot be read: the list then
   * shows matter ids.
   */
  async function loadMatterNames(signal) {
    if (!session?.roles.some((r) => r === 'counsel' || r === 'firm_admin')) return null;
    try {
      const { data } = await api('/v1/matters', { signal });
      const names = new Map();
      for (const m of Array.isArray(data?.matters) ? data.matters : []) {
        if (m && typeof m === 'object' && str(m.matter_id) && str(m.name)) names.set(str(m.matter_id), str(m.name));
      }
      return names;
    } catch (err) {
      if (isAbort(err)) throw err;
      return null; // 403 (not a keeper of the registry) or unavailable: ids it is
    }
  }

  /**
   * Brings the warrant a link named into view once the list is in: its
   * warrant opened and its toggle focused, the filters cleared if they hid
   * it; or, when it is no longer pending (decided or expired), says so with
   * a link to its run.
   */
  function showLinkedWarrant(els, target) {
    const card = [...els.list.querySelectorAll('li.warrant')].find((li) => li.dataset.approvalId === target.approvalId);
    let gone = byId('warrant-gone');
    if (!card) {
      if (!gone) {
        gone = h('p', { id: 'warrant-gone', class: 'notice', role: 'status' });
        els.list.before(gone);
      }
      gone.replaceChildren(`The warrant this link names is no longer pending: it was decided or it expired. `,
        h('a', { href: runHash(target.runId), text: 'See its run' }), '.');
      gone.focus?.();
      return;
    }
    gone?.remove();
    if (card.hidden) {
      listFilter.matter = '';
      listFilter.tier = '';
      els.matterSelect.value = '';
      els.tierSelect.value = '';
      applyFilters(els);
    }
    const c = warrantControls.get(card);
    c?.setOpen(true);
    card.classList.add('linked');
    card.scrollIntoView({ block: 'start' });
    (card.querySelector('.warrant-toggle') || card).focus({ preventScroll: true });
  }

  /**
   * How often the list looks for warrants that arrived or went while it is
   * shown and the tab is visible. window.__deskRefreshMs, read when the list
   * is shown, overrides it (the browser tests set it).
   */
  function refreshInterval() {
    const ms = Number(window.__deskRefreshMs);
    return Number.isFinite(ms) && ms >= 50 ? ms : LIST_REFRESH_MS;
  }

  function renderDesk(view, ctx, target) {
    const refresh = h('button', { id: 'refresh', type: 'button', class: 'secondary', text: 'Refresh' });
    const updated = h('span', { class: 'updated' });
    const matterSelect = h('select', { id: 'filter-matter', name: 'matter' }, h('option', { value: '', text: 'All matters' }));
    const tierSelect = h('select', { id: 'filter-tier', name: 'tier' },
      h('option', { value: '', text: 'All tiers' }),
      [...TIERS].map((t) => h('option', { value: t, text: t })));
    tierSelect.value = listFilter.tier;
    const count = h('p', { id: 'warrant-count', class: 'warrant-count', role: 'status' });
    const list = h('ul', { id: 'warrants', class: 'warrants', 'aria-label': 'Pending warrants', 'aria-describedby': 'keys-hint' });
    const noMatch = h('p', { id: 'no-match', class: 'empty', hidden: true, text: 'No pending warrant matches these filters.' });
    view.append(
      h('div', { class: 'view-head' }, h('h1', { text: 'Pending warrants', tabindex: '-1' }), refresh),
      h('div', { class: 'list-tools', role: 'group', 'aria-label': 'Filter the pending warrants' },
        h('div', { class: 'filter' }, h('label', { for: 'filter-matter', text: 'Matter' }), matterSelect),
        h('div', { class: 'filter' }, h('label', { for: 'filter-tier', text: 'Risk tier' }), tierSelect)),
      h('p', { class: 'list-status muted' }, count, h('span', { class: 'sort-note', text: 'Soonest deadline first.' }), ' ', updated),
      list,
      noMatch,
      h('p', { id: 'keys-hint', class: 'keys-hint muted', text: 'Keys: j or n moves to the next warrant, k or p to the previous one; Enter opens or closes it.' }));

    const els = { list, matterSelect, tierSelect, count, noMatch };
    ctx.els = els;
    const onFilter = () => {
      listFilter.matter = matterSelect.value;
      listFilter.tier = tierSelect.value;
      applyFilters(els);
    };
    matterSelect.addEventListener('change', onFilter);
    tierSelect.addEventListener('change', onFilter);

    // j / n: the next warrant, k / p: the previous one, anywhere in the
    // desk but a text field or a choice (where the keys are typing).
    view.addEventListener('keydown', (ev) => {
      if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
      const dir = { j: 1, n: 1, k: -1, p: -1 }[ev.key];
      if (!dir || !(ev.target instanceof Element) || ev.target.closest('input, textarea, select, [contenteditable]')) return;
      if (moveToWarrant(list, ev.target.closest('li.warrant'), dir)) ev.preventDefault();
    }, { signal: ctx.signal }); // #view outlives this list: the listener goes with it

    let loadSeq = 0;
    // quiet: the list refreshing itself; it never takes the focus, disables
    // the Refresh button or says "Loading…".
    const load = async ({ quiet = false } = {}) => {
      const seq = ++loadSeq;
      if (!quiet) {
        refresh.disabled = true;
        list.setAttribute('aria-busy', 'true');
        updated.textContent = 'Loading…';
      }
      try {
        const [approvals, names, catalog] = await Promise.all([
          loadPending(ctx.signal),
          loadMatterNames(ctx.signal),
          loadToolCatalog().catch(() => null), // titles only: the list stands without them
        ]);
        if (!ctx.alive || seq !== loadSeq) return;
        setError('');
        renderWarrants(els, approvals, names, catalog, ctx);
        updated.textContent = `Updated ${new Date().toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}`;
        if (target && !ctx.linkShown) {
          ctx.linkShown = true;
          showLinkedWarrant(els, target);
        }
      } catch (err) {
        if (!ctx.alive || seq !== loadSeq) return;
        if (!quiet) updated.textContent = '';
        showError(err);
      } finally {
        if (ctx.alive && seq === loadSeq) {
          refresh.disabled = false;
          list.removeAttribute('aria-busy');
        }
      }
    };
    refresh.addEventListener('click', () => load());
    ctx.every(() => updateExpiries(list), EXPIRY_TICK_MS);
    ctx.every(() => { if (document.visibilityState === 'visible') load({ quiet: true }); }, refreshInterval());
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && ctx.alive) load({ quiet: true });
    }, { signal: ctx.signal });
    load();
  }

  /**
   * Every pending warrant: the list's pages in turn, each asked for with the
   * previous page's next, until one has none. The list is sorted and
   * filtered here, so all of it is read. A next given twice would loop: the
   * reading stops there and says so.
   */
  async function loadPending(signal) {
    const all = [];
    const seen = new Set();
    let next = null;
    for (;;) {
      const path = '/v1/approvals?status=pending' + (next === null ? '' : `&next=${enc(next)}`);
      const { data } = await api(path, { signal });
      if (Array.isArray(data?.approvals)) all.push(...data.approvals);
      next = typeof data?.next === 'string' && data.next !== '' ? data.next : null;
      if (next === null) return all;
      if (seen.has(next)) throw new Problem({ title: 'Unreadable answer', detail: 'The pending list gave the same next page twice.' });
      seen.add(next);
    }
  }

  /**
   * Soonest expiry first (an unreadable expiry last); ties: the later
   * request first. view(item) is the item's warrant view.
   */
  function soonestFirst(items, view = (x) => x) {
    const time = (s) => {
      const t = Date.parse(str(s));
      return Number.isNaN(t) ? null : t;
    };
    return items
      .map((x, i) => ({ x, i, e: time(view(x)?.expires_at), r: time(view(x)?.requested_at) }))
      .sort((a, b) => {
        if ((a.e === null) !== (b.e === null)) return a.e === null ? 1 : -1;
        if (a.e !== b.e) return a.e - b.e;
        if (a.r !== b.r) return (b.r ?? -Infinity) > (a.r ?? -Infinity) ? 1 : -1;
        return b.i - a.i;
      })
      .map((y) => y.x);
  }

  /** What each warrant on the list shows, and how it is opened, closed and locked (see renderWarrant). */
  const warrantControls = new WeakMap();

  /**
   * Shows the warrants, soonest expiry first. A warrant already on screen
   * (same approval id, same hash: a pending warrant's call never changes)
   * keeps its element, and with it counsel's note, an open warrant and an
   * edit in progress; elements already shown are never moved (a move would
   * take the focus from them), new ones are put in their place. A warrant
   * this page decided stays, saying so; one that is no longer pending goes,
   * unless counsel has it open, where it says it is no longer pending.
   */
  function renderWarrants(els, approvals, names, catalog, ctx) {
    const { list } = els;
    const shownBefore = new Map();
    for (const li of list.querySelectorAll(':scope > li.warrant')) shownBefore.set(li.dataset.approvalId, li);
    byId('no-warrants')?.remove();
    const warrants = Array.isArray(approvals) ? approvals.filter((w) => w && typeof w === 'object') : [];
    const entries = warrants.map((w) => {
      const id = str(w.approval_request_id);
      const prev = shownBefore.get(id);
      if (prev && prev.dataset.hash === str(w.tool_input_hash)) {
        shownBefore.delete(id);
        for (const el of prev.querySelectorAll('.matter-value')) showMatter(el, str(w.matter_id), names);
        warrantControls.get(prev)?.retitle(catalog);
        return { w, li: prev };
      }
      return { w, li: renderWarrant(w, ctx, names, catalog) };
    });
    for (const li of shownBefore.values()) {
      const c = warrantControls.get(li);
      if (!c) continue;
      const open = c.isOpen() || li.contains(document.activeElement);
      if (c.settled() || open) {
        if (!c.settled()) c.gone();
        entries.push({ w: c.view, li });
      }
    }
    const items = soonestFirst(entries, (e) => e.w).map((e) => e.li);
    const keep = new Set(items);
    for (const li of [...list.children]) if (!keep.has(li)) li.remove();
    items.forEach((li, i) => {
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
    });
    if (warrants.length === 0 && items.length === 0) {
      list.after(h('p', { id: 'no-warrants', class: 'empty', text: 'No warrants are waiting for counsel.' }));
    }
    // One warrant alone is opened: there is nothing else to choose from.
    if (items.length === 1 && shownBefore.size === 0 && !list.dataset.shown) warrantControls.get(items[0])?.setOpen(true);
    list.dataset.shown = 'yes';
    fillMatterFilter(els, warrants, names);
    applyFilters(els);
    updateExpiries(list);
  }

  /**
   * The matter filter's choices: the matters of the warrants listed, those
   * the registry names by name, then the others by id.
   */
  function fillMatterFilter(els, warrants, names) {
    const compareIds = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    const ids = [...new Set(warrants.map((w) => str(w.matter_id)).filter(Boolean))].sort((a, b) => {
      const na = names?.get(a) || '';
      const nb = names?.get(b) || '';
      if (Boolean(na) !== Boolean(nb)) return na ? -1 : 1;
      return na.localeCompare(nb) || compareIds(a, b);
    });
    const options = [h('option', { value: '', text: 'All matters' }),
      ...ids.map((id) => h('option', { value: id, text: names?.get(id) ? `${names.get(id)} (${id})` : id }))];
    // Rebuilt only when the choices change, so a refresh never closes the
    // choice counsel has open.
    const now = [...els.matterSelect.options].map((o) => `${o.value}\u0000${o.textContent}`).join('\u0001');
    if (now !== options.map((o) => `${o.value}\u0000${o.textContent}`).join('\u0001')) els.matterSelect.replaceChildren(...options);
    if (!ids.includes(listFilter.matter)) listFilter.matter = '';
    els.matterSelect.value = listFilter.matter;
    els.tierSelect.value = listFilter.tier;
  }

  /** Hides the warrants the filters leave out, and says how many pending ones are shown. */
  function applyFilters(els) {
    const { list, count, noMatch } = els;
    let total = 0;
    let shown = 0;
    for (const li of list.querySelectorAll(':scope > li.warrant')) {
      const ok = (!listFilter.matter || li.dataset.matterId === listFilter.matter) &&
        (!listFilter.tier || li.dataset.tier === listFilter.tier);
      li.hidden = !ok;
      if (warrantControls.get(li)?.settled()) continue;
      total++;
      if (ok) shown++;
    }
    const plural = (n) => `${n} pending warrant${n === 1 ? '' : 's'}`;
    setText(count, total === 0 ? '' : shown === total ? plural(total) : `Showing ${shown} of ${plural(total)}`);
    noMatch.hidden = !(total > 0 && shown === 0);
    updateNextButtons(list);
  }

  /** The warrants on the list that may still be decided and are not filtered out, in order. */
  function decidable(list) {
    return [...list.querySelectorAll(':scope > li.warrant')].filter((li) => !li.hidden && warrantControls.get(li)?.pending());
  }

  /**
   * Moves the focus to the next (dir 1) or previous (dir -1) warrant that
   * may still be decided, from li (none: from the top of the list). False
   * when there is none that way.
   */
  function moveToWarrant(list, li, dir) {
    const all = [...list.querySelectorAll(':scope > li.warrant')].filter((x) => !x.hidden);
    const at = li ? all.indexOf(li) : (dir > 0 ? -1 : all.length);
    for (let i = at + dir; i >= 0 && i < all.length; i += dir) {
      const c = warrantControls.get(all[i]);
      if (!c?.pending()) continue;
      c.focus();
      return true;
    }
    return false;
  }

  /** Each open warrant's "Next warrant" button shows only when a warrant follows it. */
  function updateNextButtons(list) {
    const open = decidable(list);
    for (const li of list.querySelectorAll(':scope > li.warrant')) {
      const b = li.querySelector('.next-warrant');
      if (!b) continue;
      const i = open.indexOf(li);
      const hasNext = (i >= 0 && i < open.length - 1) || (i < 0 && open.some((x) => li.compareDocumentPosition(x) & Node.DOCUMENT_POSITION_FOLLOWING));
      b.hidden = !hasNext;
    }
  }

  /** A matter: its name, when the registry names it, and its id. */
  function showMatter(el, matterId, names) {
    if (!el) return;
    const name = names?.get(matterId) || '';
    const parts = [];
    if (name) parts.push(appendVisible(h('span', { class: 'matter-name' }), name), ' ');
    parts.push(h('code', { class: 'matter', text: matterId }));
    el.replaceChildren(...parts);
    el.classList.toggle('named', Boolean(name));
  }

  /** Who asked: the display name from their token when there was one, and the user id. */
  function requesterEl(w) {
    const id = str(w.requested_by);
    const name = str(w.requested_by_name);
    if (!name) return h('span', { class: 'requester-value' }, h('code', { class: 'requester', text: id }));
    return h('span', { class: 'requester-value named' },
      appendVisible(h('span', { class: 'requester' }), name), ' ', h('code', { class: 'requester-id', text: id }));
  }

  /**
   * A tool's display name: the catalog's title for it, else its input
   * schema's title, else its name.
   */
  function toolTitle(name, catalog) {
    const tool = catalog instanceof Map ? catalog.get(name) : null;
    return str(member(tool, 'title')).trim() || str(member(member(tool, 'input_schema'), 'title')).trim() || name;
  }

  /** A time in the reader's own zone: "14:32" today, "Tue 3 Mar, 14:32" another day (with the year when it is not this one). */
  function localTimeText(ms, now = Date.now()) {
    const d = new Date(ms);
    const today = new Date(now);
    const opts = { hour: '2-digit', minute: '2-digit' };
    if (d.toDateString() !== today.toDateString()) Object.assign(opts, { weekday: 'short', day: 'numeric', month: 'short' });
    if (d.getFullYear() !== today.getFullYear()) opts.year = 'numeric';
    return d.toLocaleString(undefined, opts);
  }

  /** A <time> in the reader's local time, with the API's ISO time on hover and in datetime (as it came, when unreadable). */
  function localTimeEl(value, cls) {
    const iso = str(value);
    const t = Date.parse(iso);
    if (Number.isNaN(t)) return h('time', { class: cls, text: iso || 'unknown' });
    return h('time', { class: cls, datetime: iso, title: iso, text: localTimeText(t) });
  }

  /**
   * The value at an RFC 6901 JSON pointer ("/bcc/0") in v, or undefined
   * when the pointer does not lead to one.
   */
  function pointerValue(v, pointer) {
    if (!pointer.startsWith('/')) return undefined;
    let cur = v;
    for (const raw of pointer.slice(1).split('/')) {
      const tok = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (Array.isArray(cur)) {
        if (!/^(0|[1-9][0-9]*)$/.test(tok) || Number(tok) >= cur.length) return undefined;
        cur = cur[Number(tok)];
      } else if (isObject(cur) && Object.prototype.hasOwnProperty.call(cur, tok)) {
        cur = cur[tok];
      } else {
        return undefined;
      }
    }
    return cur;
  }

  /** A fired rule's effect in words: raise:high "raised to high", deny "denies the call", record "recorded only". */
  function ruleEffectWords(effect) {
    const e = str(effect);
    if (e.startsWith('raise:')) return `raised to ${e.slice(6)}`;
    if (e === 'deny') return 'denies the call';
    if (e === 'record') return 'recorded only';
    return e;
  }

  let warrantSeq = 0;

  /**
   * One pending warrant: a row to triage by (matter, requester, time left
   * and the deadline, tier, the tool and its summary) that opens to the
   * whole warrant: why counsel is asked, the call's fields, the rules that
   * fired, Approve / Edit / Decline for counsel, the exact bytes signed
   * (collapsed; checked all the same) and who asked when.
   */
  function renderWarrant(w, ctx, names, catalog) {
    // What this page shows is what counsel signs: every value below comes
    // from this one view, captured here and never refetched.
    const approvalId = str(w.approval_request_id);
    const runId = str(w.run_id);
    const shownHash = str(w.tool_input_hash);
    const canonical = typeof w.tool_input_canonical === 'string' ? w.tool_input_canonical : null;
    const tier = str(w.risk_tier) || 'unknown';
    const toolName = str(w.tool_name);
    const n = ++warrantSeq;
    const wid = (s) => `warrant-${n}-${s}`;

    const li = h('li', {
      class: 'warrant card', 'data-approval-id': approvalId, 'data-hash': shownHash,
      'data-matter-id': str(w.matter_id), 'data-tier': tier,
    });

    // The row: what counsel triages by.
    const expires = h('span', { class: 'expires', 'data-expires-at': str(w.expires_at) });
    const rowMatter = h('span', { class: 'matter-value' });
    showMatter(rowMatter, str(w.matter_id), names);
    const sep = () => h('span', { class: 'sep', 'aria-hidden': 'true', text: ' \u00b7 ' });
    const badge = h('span', { class: 'expiry-badge', hidden: true },
      h('span', { class: 'badge-icon', 'aria-hidden': 'true', text: '\u26a0' }), h('span', { class: 'badge-text', text: ' Expires within the hour' }));
    const rowMeta = h('p', { class: 'row-meta', id: wid('meta') },
      rowMatter, sep(), requesterEl(w), sep(),
      h('span', { class: 'due' }, expires, ' (', localTimeEl(w.expires_at, 'deadline'), ')'), sep(),
      h('span', { class: `tier tier-${classToken(tier)}`, title: 'risk tier', text: tier }), ' ', badge);
    const title = h('span', { class: 'tool', text: toolTitle(toolName, catalog) });
    const toggle = h('button', {
      type: 'button', class: 'warrant-toggle', id: wid('toggle'), 'aria-expanded': 'false', 'aria-controls': wid('body'),
      'aria-describedby': wid('meta'),
    }, h('span', { class: 'toggle-icon', 'aria-hidden': 'true' }), title, ' ',
    h('span', { class: 'summary' }, appendVisible(document.createDocumentFragment(), str(w.human_summary))));
    const decidedNote = h('p', { class: 'decided-note', role: 'status', hidden: true });
    const row = h('div', { class: 'warrant-row' }, h('h2', { class: 'warrant-title' }, toggle), rowMeta, decidedNote);
    li.append(row);

    const body = h('div', { class: 'warrant-body', id: wid('body'), hidden: true });
    li.append(body);

    body.append(kv('Why counsel is asked', h('span', { class: 'reason', text: str(w.reason) })));

    // The call's fields, for reading, in the order people read them (see
    // orderedKeys): tool_input, or the canonical text parsed where the view
    // has no tool_input (the pending list carries each input once, as the
    // canonical text).
    const fields = h('dl', { class: 'fields', 'aria-label': 'The call\u2019s fields' });
    const input = w.tool_input !== undefined ? w.tool_input : parsedCanonical(canonical);
    const schema = catalog instanceof Map ? member(catalog.get(toolName), 'input_schema') : undefined;
    if (isObject(input)) {
      for (const key of orderedKeys(Object.keys(input), schema)) {
        const value = input[key];
        fields.append(
          h('dt', {}, appendVisible(document.createDocumentFragment(), key)),
          h('dd', { class: typeof value === 'string' ? 'field-string' : 'field-json' },
            appendVisible(document.createDocumentFragment(), fieldText(value))));
      }
    }
    body.append(fields);

    // The risk policy's rules that fired: their words first, the rule and
    // its effect quieter; a record rule (it changes nothing) is information.
    const rules = Array.isArray(w.fired_rules) ? w.fired_rules.filter((r) => r && typeof r === 'object') : [];
    const rulesList = h('ul', { class: 'fired-rules' }, rules.map((r) => {
      const effect = str(r.effect);
      const kind = effect === 'record' ? 'record' : effect === 'deny' ? 'deny' : effect.startsWith('raise:') ? 'raise' : 'other';
      // A provenance rule names the value it is about by its pointer in
      // the input (its reason never quotes it): shown here, from the same
      // input counsel reads above.
      const at = typeof r.pointer === 'string' && r.pointer !== '' ? pointerValue(input, r.pointer) : undefined;
      const value = at === undefined ? null : h('span', { class: 'rule-value' },
        h('code', { class: 'rule-value-text' }, appendVisible(document.createDocumentFragment(), fieldText(at))), ': ');
      return h('li', { class: `rule rule-${kind}`, 'data-effect': effect, 'data-pointer': str(r.pointer) },
        value, h('span', { class: 'rule-reason', text: str(r.reason) }), ' ',
        h('span', { class: 'rule-source' }, '(', h('code', { class: 'rule-id', text: str(r.id) }), ': ',
          h('span', { class: 'rule-effect', title: effect, text: ruleEffectWords(effect) }), ')'));
    }));
    body.append(h('div', { class: 'rules-block' },
      h('span', { class: 'label', text: 'Policy rules that fired' }),
      rules.length ? null : h('span', { class: 'muted', text: ' none' }),
      rulesList));

    // The hash the decision is bound to, checked in this browser.
    const hashCheck = h('span', { class: 'hash-check pending', text: 'checking the hash in your browser\u2026' });
    const decision = h('div', { class: 'decision' }, h('p', { class: 'hash-status' }, hashCheck));
    body.append(decision);

    // The exact canonical arguments the warrant covers, and their hash:
    // collapsed, and checked whether open or not.
    const pre = h('pre', { class: 'args', tabindex: '0', 'aria-label': 'Arguments as signed (canonical JSON)' });
    if (canonical !== null) {
      appendVisible(pre, canonical);
    } else {
      pre.classList.add('missing');
      pre.textContent = 'The API sent no canonical arguments for this warrant.';
    }
    body.append(h('details', { class: 'args-block' },
      h('summary', { text: 'Exact bytes signed' }),
      h('p', { class: 'muted args-note', text: 'The call as canonical JSON: the bytes whose SHA-256 your decision is bound to.' }),
      pre,
      h('div', { class: 'kv hash-block' },
        h('span', { class: 'label', text: 'SHA-256' }), ' ', h('code', { class: 'hash', text: shownHash }))));

    // Who, what matter, when.
    const matter = h('span', { class: 'matter-value' });
    showMatter(matter, str(w.matter_id), names);
    const toolRow = kv('Tool', h('code', { class: 'tool-name', text: toolName }));
    toolRow.hidden = title.textContent === toolName;
    const meta = h('div', { class: 'meta' },
      kv('Requested by', requesterEl(w)),
      kv('Requested at', localTimeEl(w.requested_at, 'requested')),
      kv('Deadline', localTimeEl(w.expires_at, 'deadline-at')),
      kv('Matter', matter),
      toolRow,
      kv('Policy version', h('code', { class: 'policy-version', text: str(w.policy_version) })),
      kv('Run', h('a', { class: 'run-link', href: runHash(runId), text: runId || 'run' })));
    body.append(meta);
    // A tool the firm connected (the tool catalog's): the system that runs
    // the call, and the schema the catalog pinned it to.
    if (str(w.tool_server) !== '') {
      const server = h('code', { class: 'tool-server' });
      appendVisible(server, str(w.tool_server));
      body.append(h('div', { class: 'meta external' },
        kv('Runs on', server),
        kv('Schema pinned at', h('code', { class: 'tool-schema', text: str(w.tool_schema_sha256) }))));
    }
    const next = h('button', { type: 'button', class: 'next-warrant secondary', text: 'Next warrant \u2193' });
    next.addEventListener('click', () => {
      const list = li.parentElement;
      if (list) moveToWarrant(list, li, 1);
    });
    body.append(h('div', { class: 'warrant-foot' }, next));

    // hashOk: the shown hash matches the shown bytes. busy: a request is out.
    // locked: this warrant may not be decided from this page any more
    // (decided, or refused for good). expired: its time is up. gone: no
    // longer on the pending list.
    const st = { hashOk: false, busy: false, locked: false, decided: '', expired: false, gone: false };
    let sync = () => {};

    const setOpen = (open) => {
      body.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
      li.classList.toggle('open', open);
    };
    toggle.addEventListener('click', () => setOpen(body.hidden));
    // A click anywhere on the row opens or closes it too (not on a link, or
    // when counsel is selecting its text).
    row.addEventListener('click', (ev) => {
      if (!(ev.target instanceof Element) || ev.target.closest('a, button, input, textarea, select')) return;
      if (String(window.getSelection?.() ?? '') !== '') return;
      setOpen(body.hidden);
    });

    const locked = (words, cls) => {
      li.classList.add(cls);
      decidedNote.hidden = false;
      decidedNote.replaceChildren(words, ' ', h('a', { href: runHash(runId), text: 'See its run' }), '.');
      sync();
    };
    warrantControls.set(li, {
      view: w,
      setOpen,
      isOpen: () => !body.hidden,
      focus: () => {
        li.scrollIntoView({ block: 'nearest' });
        toggle.focus({ preventScroll: true });
      },
      retitle: (cat) => {
        title.textContent = toolTitle(toolName, cat);
        toolRow.hidden = title.textContent === toolName;
      },
      pending: () => !(st.locked || st.expired || st.gone || st.decided),
      settled: () => Boolean(st.decided || st.gone),
      expire: () => {
        if (st.expired || st.decided) return;
        st.expired = true;
        locked('This warrant expired: it can no longer be approved or declined.', 'expired');
      },
      gone: () => {
        if (st.gone || st.decided) return;
        st.gone = true;
        locked('This warrant is no longer pending: it was decided elsewhere or it expired.', 'gone');
      },
    });

    if (!isCounsel()) {
      decision.append(h('p', { class: 'muted not-counsel', text: 'Only counsel may decide a warrant.' }));
      verifyShownHash(canonical, shownHash, hashCheck, () => {});
      return li;
    }

    // Counsel's decision. The note goes with an approval; a decline asks
    // for its own reason, which is required.
    const note = h('textarea', {
      class: 'note', maxlength: String(NOTE_MAX), placeholder: 'Note (optional)', rows: '2',
      'aria-label': 'Note to the record with an approval (optional)',
    });
    note.value = draftNotes.get(approvalId) ?? '';
    note.addEventListener('input', () => draftNotes.set(approvalId, note.value));
    const approve = h('button', { type: 'button', class: 'approve primary', disabled: true, text: 'Approve and continue the run' });
    const edit = h('button', { type: 'button', class: 'edit secondary', disabled: true, 'aria-expanded': 'false', text: 'Edit the call\u2026' });
    const decline = h('button', { type: 'button', class: 'decline quiet', disabled: true, 'aria-expanded': 'false', 'aria-controls': wid('decline'), text: 'Decline\u2026' });
    const actions = h('div', { class: 'actions' }, approve, edit, h('span', { class: 'actions-gap', 'aria-hidden': 'true' }), decline);

    const reasonKey = `decline:${approvalId}`;
    const reason = h('textarea', {
      id: wid('decline-reason'), class: 'decline-reason', maxlength: String(NOTE_MAX), rows: '3', required: true,
      'aria-describedby': `${wid('decline-help')} ${wid('decline-invalid')}`,
    });
    reason.value = draftNotes.get(reasonKey) ?? '';
    const reasonInvalid = h('p', { class: 'decline-invalid', id: wid('decline-invalid'), hidden: true });
    const confirmDecline = h('button', { type: 'button', class: 'confirm-decline danger', text: 'Decline this warrant' });
    const cancelDecline = h('button', { type: 'button', class: 'cancel-decline secondary', text: 'Cancel' });
    const declinePanel = h('section', { class: 'decline-panel', id: wid('decline'), hidden: true, 'aria-labelledby': wid('decline-heading') },
      h('h3', { id: wid('decline-heading'), class: 'decline-heading', text: 'Decline the warrant' }),
      h('label', { for: wid('decline-reason'), text: 'Reason (required)' }),
      h('p', { class: 'hint', id: wid('decline-help'), text: 'The requester is shown your reason, and it is recorded with the decision. Nothing is sent; the run goes on without this call.' }),
      reason, reasonInvalid,
      h('div', { class: 'actions' }, confirmDecline, cancelDecline));
    const reasonOk = () => {
      const ok = reason.value.trim() !== '';
      if (ok) {
        reason.removeAttribute('aria-invalid');
        reasonInvalid.hidden = true;
        reasonInvalid.textContent = '';
      }
      return ok;
    };
    reason.addEventListener('input', () => {
      draftNotes.set(reasonKey, reason.value);
      if (!reasonInvalid.hidden) reasonOk();
    });
    decision.append(note, actions, declinePanel);

    // The call as an object, only if this browser writes it back to the
    // very bytes shown (RFC 8785): an edit starts from exactly those.
    const original = parseCanonicalObject(canonical);
    let editor = null;
    if (original) {
      editor = createEditor({
        toolName, matterId: str(w.matter_id), original, canonical, shownHash, toggle: edit,
        // Where the focus lands: the reason, then the rules that raised the
        // tier or deny (a record rule changes nothing).
        hints: [str(w.reason), ...rules.filter((r) => str(r.effect) !== 'record').map((r) => `${str(r.id)} ${str(r.reason)}`)].join(' '),
        approve: (e) => decide('approve', e),
      });
      edit.setAttribute('aria-controls', editor.el.id);
      decision.append(editor.el);
    } else {
      edit.hidden = true;
      if (canonical !== null) {
        decision.append(h('p', { class: 'muted no-edit', text: 'This browser cannot write the call back to its exact bytes, so it cannot be edited here.' }));
      }
    }

    sync = () => {
      const off = !st.hashOk || st.busy || st.locked || st.expired || st.gone;
      approve.disabled = off;
      decline.disabled = off;
      confirmDecline.disabled = off;
      edit.disabled = off || !editor;
      note.readOnly = st.busy || st.locked;
      reason.readOnly = st.busy || st.locked;
      editor?.sync(off);
    };
    verifyShownHash(canonical, shownHash, hashCheck, (ok) => { st.hashOk = ok; sync(); });
    edit.addEventListener('click', () => editor?.toggle());

    const showDecline = (open) => {
      declinePanel.hidden = !open;
      decline.setAttribute('aria-expanded', String(open));
      if (open) reason.focus();
      else decline.focus();
    };
    decline.addEventListener('click', () => {
      if (decline.disabled) return;
      showDecline(declinePanel.hidden);
    });
    cancelDecline.addEventListener('click', () => showDecline(false));
    declinePanel.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !ev.defaultPrevented) {
        ev.preventDefault();
        showDecline(false);
      }
    });
    confirmDecline.addEventListener('click', () => {
      if (!reasonOk()) {
        reason.setAttribute('aria-invalid', 'true');
        reasonInvalid.hidden = false;
        reasonInvalid.textContent = 'Give a reason before declining: the requester is shown it, and it is recorded.';
        reason.focus();
        return;
      }
      decide('deny');
    });

    const resume = async () => {
      await api(`/v1/runs/${enc(runId)}/resume`, { method: 'POST', body: { approval_request_id: approvalId } });
      justResumed.set(runId, approvalId);
      draftNotes.delete(approvalId);
      draftNotes.delete(reasonKey);
    };

    /**
     * Sends counsel's decision: approve or deny the call as requested, or
     * (edited: {value, hash}) approve the edited call whose canonical JSON
     * and hash the editor shows.
     */
    const decide = async (decisionWord, edited = null) => {
      if (st.busy || st.locked || st.expired || st.gone || !st.hashOk) return;
      // Its time may be up since the last tick.
      if (timeLeft(str(w.expires_at)).expired) {
        warrantControls.get(li)?.expire();
        return;
      }
      const slot = edited ? editor.problemSlot : decisionWord === 'deny' ? declinePanel : null;
      const text = decisionWord === 'deny' ? reason.value : note.value;
      if (decisionWord === 'deny' && text.trim() === '') return;
      if (text.length > NOTE_MAX) {
        showProblem(li, new Problem({ title: 'Note too long', detail: `a note holds at most ${NOTE_MAX} characters` }), slot);
        return;
      }
      st.busy = true;
      sync();
      clearProblem(li);
      const reqBody = { decision: decisionWord, tool_input_hash: shownHash };
      if (edited) reqBody.edited_input = edited.value;
      if (text.trim()) reqBody.note = text;
      let answer;
      try {
        // Not tied to the view's signal: a decision once sent is not "cancelled" by navigating.
        answer = (await api(`/v1/runs/${enc(runId)}/approvals/${enc(approvalId)}`, { method: 'POST', body: reqBody })).data;
      } catch (err) {
        showProblem(li, err, slot, edited ? editor.explain(err) : '');
        st.busy = false;
        // Try again only when the failure may be passing (network, 5xx), or
        // when the server refused the edit itself (400: it does not fit the
        // tool's schema; 422: the risk policy denies it), which counsel may
        // correct; a 403, 404, 409 or 410 stands.
        const correctable = edited && err instanceof Problem && (err.status === 400 || err.status === 422);
        if (!(err instanceof Problem && (err.retryable || correctable))) st.locked = true;
        if (err instanceof Problem && err.status === 410) st.expired = true;
        sync();
        return;
      }
      // The decision is recorded: it cannot be made again from this page.
      st.decided = decisionWord;
      st.locked = true;
      st.busy = false;
      sync();
      li.classList.add('decided');
      let resumeNow = true;
      let words = decisionWord === 'approve'
        ? 'Approved: the run continues with this call.'
        : 'Declined, with your reason recorded: nothing was sent, and the run goes on without this call.';
      if (edited) {
        words = `Approved as edited (SHA-256 ${edited.hash}): the run continues with the edited call.`;
        const recorded = str(answer?.edited_input_hash);
        if (recorded !== edited.hash) {
          // Not what counsel was shown: say so and leave the run held.
          resumeNow = false;
          words = `Approved as edited, but the run was not resumed: the server recorded the edit under SHA-256 ${recorded || '(none)'}.`;
          showProblem(li, new Problem({
            title: 'Edited hash differs',
            detail: `the server recorded the edit under SHA-256 ${recorded || '(none)'}, not the ${edited.hash} shown here; the run was not resumed`,
          }), slot);
        }
      }
      decidedNote.hidden = false;
      decidedNote.replaceChildren(words, ' ', h('a', { href: runHash(runId), text: 'See its run' }), '.');
      applyFilters(ctx.els || { list: li.parentElement, count: byId('warrant-count'), noMatch: byId('no-match') });
      if (!resumeNow) return;
      try {
        await resume();
      } catch (err) {
        showProblem(li, err, slot);
        decidedNote.replaceChildren(`${decisionWord === 'approve' ? 'Approved' : 'Declined'}; the run was not resumed. `,
          h('a', { href: runHash(runId), text: 'See its run' }), '.');
        if (err instanceof Problem && err.retryable) offerResumeRetry(li, resume);
        return;
      }
      if (!ctx.alive) return; // counsel has gone elsewhere
      const list = li.parentElement;
      // The next warrant, if any waits: the desk stays on the list. Else,
      // after an approval, it follows the run.
      setOpen(false);
      if (list && moveToWarrant(list, li, 1)) return;
      if (list && moveToWarrant(list, li, -1)) return;
      if (decisionWord === 'approve') {
        location.hash = runHash(runId);
        return;
      }
      toggle.focus();
    };

    approve.addEventListener('click', () => decide('approve'));
    return li;
  }

  /**
   * Hashes the canonical bytes shown and compares them with the hash shown:
   * the buttons stay disabled unless they match.
   */
  function verifyShownHash(canonical, shownHash, el, done) {
    const bad = (text) => {
      el.className = 'hash-check bad';
      el.textContent = text;
      done(false);
    };
    if (canonical === null) return bad('HASH NOT CHECKED: no canonical arguments to check; do not approve');
    if (!/^[0-9a-fA-F]{64}$/.test(shownHash)) return bad('HASH MISMATCH: do not approve');
    sha256HexOfText(canonical).then((got) => {
      if (got === shownHash.toLowerCase()) {
        el.className = 'hash-check ok';
        el.textContent = 'hash verified in your browser';
        done(true);
      } else {
        bad('HASH MISMATCH: do not approve');
      }
    }, (err) => bad(`HASH NOT CHECKED: ${errorText(err)}; do not approve`));
  }

  /**
   * A problem in words inside one warrant: "<status> <title>: <detail>", in
   * slot (else the warrant's decision block), and more words when there are
   * (more: which fields of an edit it concerns). The focus moves to it, so
   * a keyboard or screen reader user is at the words, not at a button the
   * failure may have disabled.
   */
  function showProblem(li, err, slot = null, more = '') {
    clearProblem(li);
    const text = errorText(err) + (more ? ` ${more}` : '');
    const p = h('p', { class: 'problem', role: 'alert', tabindex: '-1', text });
    if (err instanceof Problem) {
      if (err.status) p.dataset.status = String(err.status);
      if (err.kind) p.dataset.kind = err.kind;
      if (err.correlationId) {
        p.dataset.correlationId = err.correlationId;
        p.title = `correlation id ${err.correlationId}`;
      }
    }
    (slot || li.querySelector('.decision') || li).append(p);
    p.focus({ preventScroll: false });
  }

  function clearProblem(li) {
    for (const el of li.querySelectorAll('.problem, .retry-resume')) el.remove();
  }

  /** After a recorded decision whose resume failed for a passing reason: resume again (never decide again). */
  function offerResumeRetry(li, resume) {
    const button = h('button', { type: 'button', class: 'retry-resume secondary', text: 'Try resuming the run again' });
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        await resume();
        button.remove();
        const note = li.querySelector('.decided-note');
        if (note) note.firstChild.textContent = 'The run was resumed. ';
      } catch (err) {
        showProblem(li, err);
        if (err instanceof Problem && err.retryable) offerResumeRetry(li, resume);
      }
    });
    (li.querySelector('.decision') || li).append(button);
  }

  /** "expires in 23 h 59 min", "expires in 12 min", "expired"; soon: within the hour. */
  function timeLeft(expiresAt, now = Date.now()) {
    const t = Date.parse(expiresAt);
    if (Number.isNaN(t)) return { text: 'expiry unknown', expired: false, soon: false, ms: Infinity };
    const ms = t - now;
    if (ms <= 0) return { text: 'expired', expired: true, soon: false, ms };
    const soon = ms <= EXPIRING_SOON_MS;
    const minutes = Math.floor(ms / 60_000);
    const hours = Math.floor(minutes / 60);
    const mins = minutes % 60;
    if (hours > 0) return { text: `expires in ${hours} h ${mins} min`, expired: false, soon, ms };
    if (minutes > 0) return { text: `expires in ${minutes} min`, expired: false, soon, ms };
    return { text: 'expires in less than 1 min', expired: false, soon, ms };
  }

  /**
   * An expiry's words and its warrant's badge ("Expires within the hour";
   * in the last five minutes, how many are left), and, the moment it reads
   * "expired", the warrant locked: the countdown and the buttons agree.
   */
  function renderExpiry(el) {
    const { text, expired, soon, ms } = timeLeft(el.dataset.expiresAt || '');
    setText(el, text);
    el.classList.toggle('expired', expired);
    el.classList.toggle('soon', soon);
    const li = el.closest('li.warrant');
    if (!li) return;
    li.classList.toggle('expiring', soon);
    const badge = li.querySelector('.expiry-badge');
    if (badge) {
      badge.hidden = !soon;
      const words = ms < 60_000 ? ' Expires in less than a minute' : ms < 5 * 60_000 ? ` Expires in ${Math.floor(ms / 60_000)} min` : ' Expires within the hour';
      const t = badge.querySelector('.badge-text');
      if (t && soon) setText(t, words);
    }
    if (expired) warrantControls.get(li)?.expire();
  }

  function updateExpiries(root) {
    for (const el of root.querySelectorAll('.expires')) renderExpiry(el);
  }

  // ---------------------------------------------------------------------
  // Counsel's edit: an editor built from the tool's input schema
  // ---------------------------------------------------------------------

  /**
   * RFC 8785 (JCS), the canonical JSON the server hashes: members sorted
   * by the UTF-16 code units of their names (what Array.prototype.sort
   * compares), strings with JSON.stringify's escapes, numbers in
   * ECMAScript's shortest form, no whitespace. What it cannot write (a
   * number that is not finite, an unpaired surrogate) is an Error.
   */
  function canonicalJSON(v) {
    if (v === null || typeof v === 'boolean') return String(v);
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new Error('a number that is not finite has no JSON form');
      return JSON.stringify(v);
    }
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) throw new Error('a string holds an unpaired surrogate');
      return JSON.stringify(v);
    }
    if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(',')}]`;
    if (typeof v === 'object') {
      return `{${Object.keys(v).sort().map((k) => `${canonicalJSON(k)}:${canonicalJSON(v[k])}`).join(',')}}`;
    }
    throw new Error(`a ${typeof v} has no JSON form`);
  }

  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  /** The canonical text parsed, or null when there is none or it is not JSON. */
  function parsedCanonical(canonical) {
    if (canonical === null) return null;
    try {
      return JSON.parse(canonical);
    } catch {
      return null;
    }
  }

  /** The canonical text as an object, if it is one this browser writes back to the same text; else null. */
  function parseCanonicalObject(canonical) {
    if (canonical === null) return null;
    try {
      const v = JSON.parse(canonical);
      if (v && typeof v === 'object' && !Array.isArray(v) && canonicalJSON(v) === canonical) return v;
    } catch { /* not JSON, or not writable back */ }
    return null;
  }

  /** The tool catalog (GET /v1/tools) by tool name, fetched once a session; a failure is tried again next time. */
  let toolCatalog = null;
  function loadToolCatalog() {
    if (!toolCatalog) {
      const p = api('/v1/tools').then(({ data }) => {
        const tools = new Map();
        for (const t of Array.isArray(data?.tools) ? data.tools : []) {
          if (t && typeof t === 'object' && str(t.name)) tools.set(str(t.name), t);
        }
        return tools;
      });
      toolCatalog = p;
      p.catch(() => { if (toolCatalog === p) toolCatalog = null; });
    }
    return toolCatalog;
  }

  function isObject(v) {
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  }

  /** An own member of a parsed JSON object, or undefined (never one of Object.prototype's). */
  function member(obj, key) {
    return isObject(obj) && Object.hasOwn(obj, key) ? obj[key] : undefined;
  }

  /** The first member a JSON pointer ("/matter_id") names, or "". */
  function pointerHead(pointer) {
    if (!pointer.startsWith('/')) return '';
    return pointer.slice(1).split('/')[0].replace(/~1/g, '/').replace(/~0/g, '~');
  }

  /** A schema's type: its "type" (the first that is not "null" of a list), else one its enum implies. */
  function schemaType(schema) {
    if (!isObject(schema)) return '';
    const t = member(schema, 'type');
    if (typeof t === 'string') return t;
    if (Array.isArray(t)) return str(t.find((x) => x !== 'null'));
    return '';
  }

  /** The type a value shows it has, for a member no schema describes. */
  function valueType(v) {
    if (typeof v === 'string') return 'string';
    if (typeof v === 'boolean') return 'boolean';
    if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
    if (Array.isArray(v)) return v.every((x) => typeof x === 'string') ? 'strings' : 'json';
    return 'json';
  }

  const LONG_TEXT_FORMATS = new Set(['textarea', 'multiline', 'long-text', 'text', 'markdown', 'html']);

  /**
   * What control a member gets: 'string' (an input, or a textarea for long
   * text), 'enum' (a choice), 'strings' (a list of rows), 'integer',
   * 'number', 'boolean', or 'json' (a JSON textarea: anything else, and
   * anything the schema does not describe).
   */
  function fieldKind(schema, had, value) {
    let type = schema === null ? valueType(value) : schemaType(schema);
    if (schema !== null && type === 'array') {
      const items = member(schema, 'items');
      type = schemaType(items) === 'string' && !Array.isArray(member(items, 'enum')) ? 'strings'
        : objectColumns(items) ? 'objects' : 'json';
    }
    if (type === 'string' && Array.isArray(member(schema, 'enum'))) {
      type = member(schema, 'enum').every((x) => typeof x === 'string') ? 'enum' : 'json';
    }
    if (!['string', 'enum', 'strings', 'objects', 'integer', 'number', 'boolean'].includes(type)) return 'json';
    // A value of another type than the schema says (or one a form control
    // would not hold exactly: a carriage return) is edited as JSON.
    if (had && !fitsKind(type, schema, value)) return 'json';
    return type;
  }

  function fitsKind(kind, schema, value) {
    switch (kind) {
      case 'string': return typeof value === 'string' && !value.includes('\r');
      case 'enum': return typeof value === 'string' && member(schema, 'enum').includes(value);
      case 'strings': return Array.isArray(value) && value.every((x) => typeof x === 'string' && !/[\r\n]/.test(x));
      case 'objects': {
        const cols = objectColumns(member(schema, 'items'));
        return Array.isArray(value) && value.every((x) => isObject(x) &&
          Object.entries(x).every(([k, v]) => cols.some((c) => c.key === k && fitsKind(c.type, null, v))));
      }
      case 'integer': return Number.isSafeInteger(value);
      case 'number': return typeof value === 'number';
      case 'boolean': return typeof value === 'boolean';
      default: return false;
    }
  }

  const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

  /**
   * The columns of a list of objects edited as rows (attachments: document,
   * name, size): an item schema that is an object whose every property is
   * a string, a whole number or a number. null for anything else, which is
   * edited as JSON.
   */
  function objectColumns(items) {
    const props = member(items, 'properties');
    if (schemaType(items) !== 'object' || !isObject(props) || Object.keys(props).length === 0) return null;
    const required = new Set(Array.isArray(member(items, 'required')) ? items.required : []);
    const cols = [];
    for (const key of orderedKeys(Object.keys(props), items)) {
      const p = props[key];
      const type = schemaType(p);
      if (!['string', 'integer', 'number'].includes(type) || Array.isArray(member(p, 'enum'))) return null;
      cols.push({ key, type, required: required.has(key), format: str(member(p, 'format')) });
    }
    return cols;
  }

  /** An edit that cannot be sent as it is, in words; item: which row of a list (from 1). */
  class EditError extends Error {
    constructor(message, item = 0) {
      super(message);
      this.item = item;
    }
  }

  /**
   * The order people read and edit a call's members in, where the schema
   * does not say: GET /v1/tools sends each input schema as the catalog
   * writes it, so its members' order is the catalog's, unless they come
   * sorted by name (a schema imported in canonical form, or a catalog that
   * wrote them so): then known members come in this order, the rest after
   * them by name.
   */
  const KNOWN_ORDER = ['to', 'cc', 'bcc', 'subject', 'court', 'title', 'document_title', 'document_id', 'name', 'body', 'document_text', 'text',
    'attachments', 'size_bytes'];

  /**
   * keys in the order to show them: the schema's own order when it gives
   * one (an "x-order" or "propertyOrder" list of names, or a number of
   * that name on each property), else the order its properties are written
   * in (unless sorted by name), else KNOWN_ORDER, else by name.
   */
  function orderedKeys(keys, schema) {
    const props = member(schema, 'properties');
    const listed = [member(schema, 'x-order'), member(schema, 'propertyOrder')].find(Array.isArray) || [];
    const written = isObject(props) ? Object.keys(props) : [];
    const writtenSorted = written.every((k, i) => i === 0 || written[i - 1] < k);
    const rank = (k) => {
      const i = listed.indexOf(k);
      if (i >= 0) return [0, i];
      const p = member(props, k);
      const n = [member(p, 'x-order'), member(p, 'propertyOrder')].find((v) => typeof v === 'number' && Number.isFinite(v));
      if (n !== undefined) return [1, n];
      const w = writtenSorted ? -1 : written.indexOf(k);
      if (w >= 0) return [2, w];
      const j = KNOWN_ORDER.indexOf(k);
      return j >= 0 ? [3, j] : [4, 0];
    };
    return [...keys].sort((a, b) => {
      const ra = rank(a);
      const rb = rank(b);
      return ra[0] - rb[0] || ra[1] - rb[1] || (a < b ? -1 : a > b ? 1 : 0);
    });
  }

  /**
   * An e-mail address as the server's schema check reads format "email"
   * (santhosh-tekuri/jsonschema: a local part, an @, and a host name, which
   * may end in a dot, or an address in brackets). Looser than it on
   * purpose (no lengths, any local part), so it never refuses an address
   * the server takes: it only names the field before the server refuses it.
   */
  const EMAIL = /^(?:[^\s@"]*|"[^"]*")@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?|\[[^\]\s]+\])$/;

  /** What is wrong with a value of a format this page checks, in words, or "". */
  function formatProblem(format, value) {
    if (format === 'email' && typeof value === 'string' && value !== '' && !EMAIL.test(value)) {
      return `\u201c${value}\u201d is not an e-mail address`;
    }
    return '';
  }

  /** A member's name in words, for a label: document_id "Document", size_bytes "Size (bytes)". */
  function memberWords(key) {
    const k = String(key);
    const words = k.replace(/_id$/, '').replace(/_bytes$/, ' (bytes)').replace(/_/g, ' ').trim() || k;
    return words.charAt(0).toUpperCase() + words.slice(1);
  }

  let editorSeq = 0;

  /**
   * Counsel's editor of one warrant's call, built (when first opened) from
   * the tool's input schema in the tool catalog: strings as inputs (long
   * text as textareas), lists of strings (recipients) as rows to add and
   * remove, numbers and booleans as their controls, the matter read-only,
   * anything else (and any member the schema does not describe) as JSON.
   * Beside the original it shows the edited call's canonical JSON, its
   * SHA-256 computed here, and each member added, removed or changed.
   * "Approve edited call" sends exactly the object hashed. Escape closes it
   * (the edit is kept until the page is left).
   *
   * opts: toolName, matterId (the warrant's), original (the call, parsed), canonical and shownHash
   * (the original's bytes and hash), toggle (the Edit button), approve(edit), hints (the
   * warrant's reason and rules: the first field they name is where the focus lands).
   */
  function createEditor({ toolName, matterId, original, canonical, shownHash, toggle, approve, hints = '' }) {
    const n = ++editorSeq;
    const id = (s) => `editor-${n}-${s}`;
    const heading = h('h3', { id: id('heading'), class: 'editor-heading', tabindex: '-1', text: 'Edit the call before approving' });
    const schemaNote = h('p', { class: 'schema-note', hidden: true });
    const fieldsBox = h('div', { class: 'editor-fields' }, h('p', { class: 'muted', text: 'Loading the tool\u2019s input schema\u2026' }));
    const origPre = appendVisible(h('pre', { class: 'args orig-canonical', tabindex: '0', 'aria-labelledby': id('orig') }), canonical);
    const editPre = h('pre', { class: 'args edit-canonical', tabindex: '0', 'aria-labelledby': id('edited') });
    const editHash = h('code', { class: 'edit-hash', id: id('hash') });
    const invalid = h('p', { class: 'edit-invalid', id: id('invalid'), hidden: true });
    const diffSummary = h('p', { class: 'diff-summary', id: id('diff-summary'), 'aria-live': 'polite' });
    const diffList = h('ul', { class: 'diff', 'aria-labelledby': id('diff') });
    const approveEdit = h('button', {
      type: 'button', class: 'approve-edit primary', disabled: true, text: 'Approve edited call',
      'aria-describedby': `${id('hash')} ${id('diff-summary')}`,
    });
    const close = h('button', { type: 'button', class: 'close-editor secondary', text: 'Close editor' });
    const problemSlot = h('div', { class: 'editor-problems' });

    const el = h('section', { class: 'editor', id: id('section'), hidden: true, 'aria-labelledby': id('heading') },
      heading,
      h('p', { class: 'muted editor-intro', text: 'Approving an edit signs the edited call instead of the one requested. ' +
        'The server checks it against the tool\u2019s input schema and the risk policy before it records anything.' }),
      schemaNote,
      fieldsBox,
      invalid,
      h('h4', { id: id('diff'), text: 'Changes from the call as requested' }),
      diffSummary,
      diffList,
      // The bytes counsel signs, beside the original's: collapsed, and
      // hashed here whether open or not.
      h('details', { class: 'edit-bytes' },
        h('summary', { text: 'Exact bytes to be signed' }),
        h('div', { class: 'edit-compare' },
          h('div', { class: 'compare-col' },
            h('h4', { id: id('orig'), text: 'Original call (canonical JSON)' }), origPre,
            h('div', { class: 'kv' }, h('span', { class: 'label', text: 'SHA-256' }), ' ', h('code', { class: 'orig-hash', text: shownHash }))),
          h('div', { class: 'compare-col' },
            h('h4', { id: id('edited'), text: 'Edited call (canonical JSON)' }), editPre,
            h('div', { class: 'kv' }, h('span', { class: 'label', text: 'SHA-256, computed in your browser' }), ' ', editHash)))),
      h('div', { class: 'actions' }, approveEdit, close),
      problemSlot);

    let fields = [];
    let built = null; // the promise of the form
    let current = null; // {value, canonical, hash} of the form as last hashed
    let off = true; // the warrant may not be decided now
    let seq = 0;
    let lastDiffs = [];

    const collect = () => {
      const value = Object.create(null);
      const errors = [];
      for (const f of fields) {
        try {
          const r = f.read();
          f.invalid(false);
          if (r.present) value[f.key] = r.value;
        } catch (err) {
          if (!(err instanceof EditError)) throw err;
          f.invalid(true, err.item);
          errors.push(`${f.key}${err.item ? `, item ${err.item}` : ''}: ${err.message}`);
        }
      }
      let canon = null;
      if (errors.length === 0) {
        try {
          canon = canonicalJSON(value);
        } catch (err) {
          errors.push(err.message);
        }
      }
      return { value, canonical: canon, errors };
    };

    const sync = () => {
      approveEdit.disabled = off || !current || current.hash === shownHash;
    };

    const update = () => {
      const mine = ++seq;
      current = null;
      // A refusal was of the call as it was: once it changes, the words go.
      problemSlot.replaceChildren();
      sync();
      const { value, canonical: canon, errors } = collect();
      if (errors.length) {
        invalid.hidden = false;
        invalid.textContent = `The edit cannot be sent as it is: ${errors.join('; ')}.`;
        editPre.textContent = '';
        editHash.textContent = 'not computed: the edit is not valid';
        diffList.replaceChildren();
        setText(diffSummary, 'The differences are shown once the edit is valid.');
        return;
      }
      invalid.hidden = true;
      invalid.textContent = '';
      editPre.replaceChildren();
      appendVisible(editPre, canon);
      const diffs = memberDiffs(original, value, fields.map((f) => f.key));
      lastDiffs = diffs;
      diffList.replaceChildren(...diffs.map(renderDiff));
      setText(diffSummary, diffs.length === 0
        ? 'No changes: this is the call as requested (approve it with \u201cApprove and continue the run\u201d).'
        : `${diffs.length} change${diffs.length === 1 ? '' : 's'}: ${diffs.map((d) => `${d.member} ${d.detail ? `changed (${d.detail})` : d.change}`).join('; ')}.`);
      editHash.textContent = 'computing\u2026';
      sha256HexOfText(canon).then((hash) => {
        if (mine !== seq) return;
        editHash.textContent = hash;
        current = { value, canonical: canon, hash };
        sync();
      }, (err) => {
        if (mine === seq) editHash.textContent = `not computed: ${errorText(err)}`;
      });
    };

    const build = async () => {
      let tool = null;
      let why = '';
      try {
        tool = (await loadToolCatalog()).get(toolName) || null;
        if (!tool) why = `the tool catalog does not list ${toolName}`;
      } catch (err) {
        why = `the tool catalog could not be read (${errorText(err)})`;
      }
      const schema = tool && isObject(tool.input_schema) ? tool.input_schema : null;
      if (!schema) {
        schemaNote.hidden = false;
        schemaNote.textContent = `Built from the call\u2019s own values: ${why || 'the tool has no input schema'}. ` +
          'The server still checks the edit against the tool\u2019s schema.';
      }
      const props = isObject(member(schema, 'properties')) ? schema.properties : Object.create(null);
      const requiredList = member(schema, 'required');
      const required = new Set(Array.isArray(requiredList) ? requiredList.filter((k) => typeof k === 'string') : []);
      // The member that carries the matter: the catalog's matter_field;
      // without the catalog, a matter_id that names the warrant's matter.
      const matterKey = tool ? pointerHead(str(tool.matter_field))
        : (matterId && member(original, 'matter_id') === matterId ? 'matter_id' : '');
      const keys = orderedKeys(new Set([...Object.keys(props), ...Object.keys(original)]), schema);
      // The matter, which may not be changed, comes last.
      if (matterKey && keys.includes(matterKey)) keys.push(...keys.splice(keys.indexOf(matterKey), 1));
      fields = keys.map((key) => makeField({
        key,
        ids: id(`f${keys.indexOf(key)}`),
        schema: schema === null ? null : (Object.hasOwn(props, key) && isObject(props[key]) ? props[key] : undefined),
        had: Object.hasOwn(original, key),
        value: member(original, key),
        required: required.has(key),
        readOnly: key === matterKey && Object.hasOwn(original, key),
        changed: update,
      }));
      fieldsBox.replaceChildren(...fields.map((f) => f.row));
      update();
    };

    // The first field a person would change: the first the warrant's
    // reason or rules name as a word ("a cc or bcc recipient is outside the
    // firm": cc; "email.attachments_leave_firm": attachments), else the
    // first that may be edited.
    const firstControl = () => {
      const editable = fields.filter((f) => !f.readOnly);
      const byKey = new Map(editable.map((f) => [f.key.toLowerCase(), f]));
      let named = null;
      for (const token of String(hints).toLowerCase().split(/[^a-z0-9_]+/)) {
        named = [token, ...token.split('_')].map((x) => byKey.get(x)).find(Boolean);
        if (named) break;
      }
      return (named || editable[0])?.focusEl || heading;
    };

    const open = () => {
      el.hidden = false;
      toggle.setAttribute('aria-expanded', 'true');
      if (!built) built = build();
      heading.focus();
      built.then(() => {
        if (!el.hidden && (document.activeElement === heading || document.activeElement === document.body)) firstControl().focus();
      });
    };

    const hide = () => {
      el.hidden = true;
      toggle.setAttribute('aria-expanded', 'false');
      toggle.focus();
    };

    el.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !ev.defaultPrevented) {
        ev.preventDefault();
        hide();
      }
    });
    close.addEventListener('click', hide);
    approveEdit.addEventListener('click', () => {
      if (off || !current) return;
      // The form as it is now must be the call whose hash is shown.
      const now = collect();
      if (now.errors.length || now.canonical !== current.canonical || current.hash === shownHash) return;
      approve({ value: current.value, hash: current.hash, canonical: current.canonical });
    });

    return {
      el,
      problemSlot,
      /** More words for the server's refusal of an edit: which fields the edit changed. */
      explain: (err) => {
        if (!(err instanceof Problem) || err.status !== 400 || lastDiffs.length === 0) return '';
        return `The fields this edit changes: ${lastDiffs.map((d) => `${d.member} (${d.change})`).join(', ')}.`;
      },
      toggle: () => (el.hidden ? open() : hide()),
      sync: (isOff) => {
        off = isOff;
        sync();
      },
    };
  }

  /** Sets an element's text only when it changes (a live region says each change once). */
  function setText(el, text) {
    if (el.textContent !== text) el.textContent = text;
  }

  const CHANGE_WORDS = { added: 'Added', removed: 'Removed', changed: 'Changed' };

  /**
   * The members in which after differs from before, in order (the
   * editor's), then any other by name: added, removed or changed, with
   * their values before and after in words (see valueWords).
   */
  function memberDiffs(before, after, order = []) {
    const all = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    const keys = [...order.filter((k) => all.includes(k)), ...all.filter((k) => !order.includes(k)).sort()];
    const out = [];
    for (const key of keys) {
      const a = Object.hasOwn(before, key) ? canonicalJSON(before[key]) : null;
      const b = Object.hasOwn(after, key) ? canonicalJSON(after[key]) : null;
      if (a === b) continue;
      // A list changed: how many of its items went and came.
      let detail = '';
      if (Array.isArray(before[key]) && Array.isArray(after[key])) {
        const was = before[key].map(canonicalJSON);
        const now = after[key].map(canonicalJSON);
        const gone = was.filter((x) => !now.includes(x)).length;
        const came = now.filter((x) => !was.includes(x)).length;
        detail = [came && `${came} added`, gone && `${gone} removed`].filter(Boolean).join(', ');
      }
      out.push({
        member: key, change: a === null ? 'added' : b === null ? 'removed' : 'changed', detail,
        before: a === null ? null : valueWords(before[key]), after: b === null ? null : valueWords(after[key]),
      });
    }
    return out;
  }

  /** A field's value as the warrant shows it: valueWords, or JSON where that cannot say it. */
  function fieldText(v) {
    try {
      return valueWords(v);
    } catch {
      return str(JSON.stringify(v));
    }
  }

  /**
   * A value as a person reads it: text as it is, a list of text one item a
   * line, a list of objects one "name: value, …" a line, anything else as
   * JSON.
   */
  function valueWords(v) {
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (Array.isArray(v)) {
      if (v.length === 0) return '(none)';
      if (v.every((x) => typeof x === 'string')) return v.join('\n');
      if (v.every((x) => isObject(x))) {
        return v.map((x) => Object.entries(x).map(([k, y]) => `${k}: ${typeof y === 'string' ? y : canonicalJSON(y)}`).join(', ')).join('\n');
      }
    }
    return canonicalJSON(v);
  }

  /** One difference, in words (Added / Removed / Changed, was / now), not by colour alone. */
  function renderDiff(d) {
    return h('li', { class: `diff-item diff-${d.change}`, 'data-member': d.member, 'data-change': d.change },
      h('span', { class: 'diff-tag', text: CHANGE_WORDS[d.change] }), ' ',
      appendVisible(h('code', { class: 'diff-member' }), d.member),
      d.before === null ? null : h('div', { class: 'diff-was' },
        h('span', { class: 'diff-label', text: 'was' }), ' ', appendVisible(h('code', { class: 'diff-value' }), d.before)),
      d.after === null ? null : h('div', { class: 'diff-now' },
        h('span', { class: 'diff-label', text: 'now' }), ' ', appendVisible(h('code', { class: 'diff-value' }), d.after)));
  }

  /** A hint for a member: its schema's description and what it holds. */
  function fieldHint(kind, schema, readOnly, described) {
    const parts = [];
    const desc = str(member(schema, 'description')) || str(member(schema, 'title'));
    if (desc) parts.push(desc);
    if (readOnly) parts.push('The run\u2019s matter: not editable.');
    else if (!described) parts.push('JSON: the tool\u2019s schema does not describe this member.');
    else {
      const max = member(schema, 'maxLength');
      const maxItems = member(schema, 'maxItems');
      const format = str(member(schema, 'format')) || str(member(member(schema, 'items'), 'format'));
      const words = {
        string: `Text${Number.isInteger(max) ? `, at most ${max} characters` : ''}${format ? ` (${format})` : ''}.`,
        enum: 'One of the listed values.',
        strings: `A list${format ? ` of ${format} values` : ''}${Number.isInteger(maxItems) ? `, at most ${maxItems}` : ''}; empty rows are left out.`,
        objects: `A list${Number.isInteger(maxItems) ? ` of at most ${maxItems}` : ''}, one row each; a row left empty is left out.`,
        integer: 'A whole number.',
        number: 'A number.',
        boolean: 'True or false.',
        json: 'JSON.',
      }[kind];
      if (words) parts.push(words);
    }
    return parts.join(' ');
  }

  /**
   * One member's control. spec: key, ids (a unique id prefix), schema (the
   * member's schema; null: no schema at all, undefined: not described by
   * it), had and value (the original), required, readOnly, changed (called
   * on every change). Returns {key, row, focusEl, readOnly, read(),
   * invalid(bool)}; read() is {present, value} or throws an EditError.
   */
  function makeField({ key, ids, schema, had, value, required, readOnly, changed }) {
    const described = schema !== undefined;
    const kind = readOnly ? 'readonly' : described ? fieldKind(schema, had, value) : 'json';
    const hintText = fieldHint(kind, schema ?? null, readOnly, described);
    const hint = hintText ? h('p', { class: 'hint', id: `${ids}-hint`, text: hintText }) : null;
    const labelText = (extra = '') => [appendVisible(h('span', { class: 'field-name' }), key),
      extra ? h('span', { class: 'field-type', text: ` ${extra}` }) : null,
      required ? h('span', { class: 'required', text: ' (required)' }) : null];
    const describedBy = hint ? `${ids}-hint` : null;
    const on = (el) => {
      el.addEventListener('input', changed);
      el.addEventListener('change', changed);
      return el;
    };
    const absent = () => {
      if (required) throw new EditError('is required');
      return { present: false };
    };
    let control = null;
    let focusTarget = null;
    let read;
    let row;

    switch (kind) {
      case 'readonly': {
        control = h('input', { id: ids, type: 'text', readonly: true, 'aria-describedby': describedBy, spellcheck: 'false' });
        control.value = typeof value === 'string' ? value : canonicalJSON(value);
        read = () => ({ present: true, value });
        row = h('div', { class: 'field-row readonly' }, h('label', { for: ids }, labelText()), hint, control);
        break;
      }
      case 'string': {
        const s = had ? value : '';
        const max = member(schema, 'maxLength');
        const long = (Number.isInteger(max) && max > 200) || s.includes('\n') || s.length > 120 ||
          LONG_TEXT_FORMATS.has(str(member(schema, 'format'))) || str(member(schema, 'contentMediaType')).startsWith('text/');
        control = long
          ? h('textarea', {
            id: ids, 'aria-describedby': describedBy,
            rows: String(Math.min(14, Math.max(s.includes('\n') || (Number.isInteger(max) && max > 1000) ? 5 : 2,
              s.split('\n').length + Math.ceil(s.length / 80)))),
          })
          : h('input', { id: ids, type: 'text', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': describedBy,
            inputmode: str(member(schema, 'format')) === 'email' ? 'email' : null });
        control.value = s;
        const format = str(member(schema, 'format'));
        read = () => {
          if (control.value === '' && !(had && value === '')) return absent();
          const bad = formatProblem(format, control.value);
          if (bad) throw new EditError(bad);
          return { present: true, value: control.value };
        };
        row = h('div', { class: `field-row${long ? ' long' : ''}` }, h('label', { for: ids }, labelText()), hint, on(control));
        break;
      }
      case 'enum': {
        const choices = member(schema, 'enum');
        control = h('select', { id: ids, 'aria-describedby': describedBy },
          required ? null : h('option', { value: '', text: '(not set)' }),
          choices.map((c, i) => h('option', { value: `v${i}`, text: c })));
        control.value = had ? `v${choices.indexOf(value)}` : '';
        read = () => (control.value === '' ? absent() : { present: true, value: choices[Number(control.value.slice(1))] });
        row = h('div', { class: 'field-row' }, h('label', { for: ids }, labelText()), hint, on(control));
        break;
      }
      case 'boolean': {
        control = h('select', { id: ids, 'aria-describedby': describedBy },
          required && had ? null : h('option', { value: '', text: '(not set)' }),
          h('option', { value: 'true', text: 'true' }), h('option', { value: 'false', text: 'false' }));
        control.value = had ? String(value) : '';
        read = () => (control.value === '' ? absent() : { present: true, value: control.value === 'true' });
        row = h('div', { class: 'field-row' }, h('label', { for: ids }, labelText()), hint, on(control));
        break;
      }
      case 'integer':
      case 'number': {
        control = h('input', { id: ids, type: 'text', inputmode: kind === 'integer' ? 'numeric' : 'decimal', autocomplete: 'off',
          spellcheck: 'false', 'aria-describedby': describedBy });
        control.value = had ? canonicalJSON(value) : '';
        read = () => {
          const t = control.value.trim();
          if (t === '') return absent();
          const v = Number(t);
          if (!JSON_NUMBER.test(t) || !Number.isFinite(v)) throw new EditError('is not a number');
          if (kind === 'integer' && !Number.isSafeInteger(v)) throw new EditError('is not a whole number this page can send exactly');
          return { present: true, value: v };
        };
        row = h('div', { class: 'field-row' }, h('label', { for: ids }, labelText()), hint, on(control));
        break;
      }
      case 'strings': {
        const itemFormat = str(member(member(schema, 'items'), 'format'));
        const itemWord = itemFormat === 'email' ? 'an address' : 'an item';
        const maxItems = Number.isInteger(member(schema, 'maxItems')) ? member(schema, 'maxItems') : Infinity;
        const rows = h('ul', { class: 'list-rows', id: `${ids}-rows` });
        const add = h('button', { type: 'button', class: 'add-row secondary' },
          `Add ${itemWord}`, h('span', { class: 'visually-hidden', text: ` to ${key}` }));
        const relabel = () => {
          [...rows.children].forEach((li, i) => {
            li.querySelector('.row-label').textContent = `${key}, item ${i + 1}`;
            li.querySelector('.remove-row .visually-hidden').textContent = ` ${key} item ${i + 1}`;
          });
          add.disabled = rows.children.length >= maxItems;
        };
        let rowSeq = 0;
        const addRow = (text) => {
          const rid = `${ids}-r${++rowSeq}`;
          const input = on(h('input', { id: rid, type: 'text', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': describedBy,
            inputmode: itemFormat === 'email' ? 'email' : null }));
          input.value = text;
          const remove = h('button', { type: 'button', class: 'remove-row secondary' }, 'Remove', h('span', { class: 'visually-hidden' }));
          const li = h('li', { class: 'list-row' }, h('label', { class: 'row-label visually-hidden', for: rid }), input, remove);
          remove.addEventListener('click', () => {
            // The focus goes to the next row, else the previous one, else "Add".
            const next = li.nextElementSibling || li.previousElementSibling;
            li.remove();
            relabel();
            (next ? next.querySelector('input') : add).focus();
            changed();
          });
          rows.append(li);
          return input;
        };
        for (const s of had ? value : []) addRow(s);
        add.addEventListener('click', () => {
          if (rows.children.length >= maxItems) return;
          const input = addRow('');
          relabel();
          input.focus();
          changed();
        });
        relabel();
        control = rows;
        read = () => {
          const inputs = [...rows.querySelectorAll('input')];
          inputs.forEach((input, i) => {
            const bad = formatProblem(itemFormat, input.value);
            if (bad) throw new EditError(bad, i + 1);
          });
          const items = inputs.map((i) => i.value).filter((s) => s !== '');
          if (items.length === 0 && !(had && value.length === 0)) return required ? { present: true, value: [] } : { present: false };
          return { present: true, value: items };
        };
        row = h('fieldset', { class: 'field-row list', 'aria-describedby': describedBy },
          h('legend', {}, labelText('(list)')), hint, rows, add);
        focusTarget = () => rows.querySelector('input') || add;
        break;
      }
      case 'objects': {
        // A list of objects (attachments) as rows, one input a column.
        const cols = objectColumns(member(schema, 'items'));
        const maxItems = Number.isInteger(member(schema, 'maxItems')) ? member(schema, 'maxItems') : Infinity;
        const itemWord = key.endsWith('s') && key.length > 1 ? key.slice(0, -1) : 'row';
        const rows = h('ul', { class: 'object-rows', id: `${ids}-rows` });
        const add = h('button', { type: 'button', class: 'add-row secondary' },
          `Add ${memberWords(itemWord).toLowerCase()}`, h('span', { class: 'visually-hidden', text: ` to ${key}` }));
        let rowSeq = 0;
        const relabel = () => {
          [...rows.children].forEach((li, i) => {
            li.querySelector('.object-row-label').textContent = `${memberWords(itemWord)} ${i + 1}`;
            li.querySelector('.remove-row .visually-hidden').textContent = ` ${itemWord} ${i + 1}`;
          });
          add.disabled = rows.children.length >= maxItems;
        };
        const addRow = (obj) => {
          const r = ++rowSeq;
          const inputs = cols.map((c) => {
            const cid = `${ids}-r${r}-${c.key}`;
            const input = on(h('input', {
              id: cid, type: 'text', autocomplete: 'off', spellcheck: 'false', 'data-column': c.key,
              inputmode: c.type === 'string' ? null : c.type === 'integer' ? 'numeric' : 'decimal',
            }));
            const v = member(obj, c.key);
            input.value = v === undefined ? '' : typeof v === 'string' ? v : canonicalJSON(v);
            return h('div', { class: 'object-cell' },
              h('label', { for: cid }, memberWords(c.key), c.required ? null : h('span', { class: 'field-type', text: ' (optional)' })), input);
          });
          const remove = h('button', { type: 'button', class: 'remove-row secondary' }, 'Remove', h('span', { class: 'visually-hidden' }));
          const li = h('li', { class: 'object-row' }, h('p', { class: 'object-row-label' }), h('div', { class: 'object-cells' }, inputs), remove);
          remove.addEventListener('click', () => {
            const nextRow = li.nextElementSibling || li.previousElementSibling;
            li.remove();
            relabel();
            (nextRow ? nextRow.querySelector('input') : add).focus();
            changed();
          });
          rows.append(li);
          return li;
        };
        for (const obj of had ? value : []) addRow(obj);
        add.addEventListener('click', () => {
          if (rows.children.length >= maxItems) return;
          const li = addRow(null);
          relabel();
          li.querySelector('input')?.focus();
          changed();
        });
        relabel();
        control = rows;
        read = () => {
          const items = [];
          [...rows.children].forEach((li, i) => {
            const obj = {};
            let any = false;
            for (const c of cols) {
              const t = li.querySelector(`input[data-column="${c.key}"]`).value;
              if (t.trim() === '') continue;
              any = true;
              if (c.type === 'string') {
                const bad = formatProblem(c.format, t);
                if (bad) throw new EditError(`${memberWords(c.key).toLowerCase()}: ${bad}`, i + 1);
                obj[c.key] = t;
              } else {
                const v = Number(t.trim());
                if (!JSON_NUMBER.test(t.trim()) || !Number.isFinite(v) || (c.type === 'integer' && !Number.isSafeInteger(v))) {
                  throw new EditError(`${memberWords(c.key).toLowerCase()} is not ${c.type === 'integer' ? 'a whole number' : 'a number'}`, i + 1);
                }
                obj[c.key] = v;
              }
            }
            if (!any) return; // a row left empty is left out
            const missing = cols.filter((c) => c.required && !Object.hasOwn(obj, c.key));
            if (missing.length) throw new EditError(`${missing.map((c) => memberWords(c.key).toLowerCase()).join(', ')} missing`, i + 1);
            items.push(obj);
          });
          if (items.length === 0 && !(had && value.length === 0)) return required ? { present: true, value: [] } : { present: false };
          return { present: true, value: items };
        };
        row = h('fieldset', { class: 'field-row list objects', 'aria-describedby': describedBy },
          h('legend', {}, labelText('(list)')), hint, rows, add);
        focusTarget = () => rows.querySelector('input') || add;
        break;
      }
      default: { // json
        control = h('textarea', { id: ids, class: 'json', rows: '4', spellcheck: 'false', 'aria-describedby': describedBy });
        control.value = had ? JSON.stringify(value, null, 2) : '';
        read = () => {
          const t = control.value.trim();
          if (t === '') return absent();
          try {
            return { present: true, value: JSON.parse(t) };
          } catch (err) {
            throw new EditError(`is not valid JSON (${err.message})`);
          }
        };
        row = h('div', { class: 'field-row json' }, h('label', { for: ids }, labelText('(JSON)')), hint, on(control));
      }
    }
    row.dataset.member = key;
    return {
      key,
      row,
      readOnly,
      get focusEl() { return focusTarget ? focusTarget() : control; },
      read,
      /** Marks the control invalid or not; item: only that row of a list (from 1). */
      invalid(bad, item = 0) {
        const list = kind === 'strings' || kind === 'objects';
        const targets = list ? [...control.querySelectorAll('input')] : [control];
        for (const t of targets) {
          const rowNo = list ? [...control.children].indexOf(t.closest('li')) + 1 : 0;
          if (bad && (!item || rowNo === item)) t.setAttribute('aria-invalid', 'true');
          else t.removeAttribute('aria-invalid');
        }
      },
    };
  }

  // ---------------------------------------------------------------------
  // A run: status, cost, the server's chain check, its receipts, the ledger
  // ---------------------------------------------------------------------

  function renderRun(view, runId, ctx) {
    const refresh = h('button', { id: 'run-refresh', type: 'button', class: 'secondary', text: 'Refresh' });
    const status = h('span', { id: 'run-status', class: 'run-status' });
    const cost = h('span', { id: 'run-cost' });
    const chain = h('span', { id: 'chain', class: 'chain' });
    const details = h('div', { class: 'run-details' });
    const held = h('p', { id: 'run-held', class: 'held-note', hidden: true });
    // What became of the run's actions, from the ledger (never the model's
    // words): at the top, so a completed run whose filing failed never
    // reads as a done one.
    const actionsHeading = h('h2', { id: 'run-actions-heading' });
    const actionsList = h('ul', { id: 'run-actions-list', class: 'run-actions-list' });
    const actionsBox = h('section', { id: 'run-actions', class: 'run-actions', role: 'status', 'aria-labelledby': 'run-actions-heading', hidden: true },
      actionsHeading, actionsList);
    const final = h('div', { id: 'run-final', class: 'final-text' });
    const finalBlock = h('div', { class: 'run-final', hidden: true }, h('span', { class: 'label', text: 'Final answer' }), final);
    const failure = h('p', { id: 'run-failure', class: 'run-failure', hidden: true });
    const follow = h('p', { id: 'run-follow', class: 'muted', 'aria-live': 'polite' });
    const timeline = h('ol', { id: 'timeline', class: 'timeline hide-engineering' });
    // The model's engineering lines (token usage, turns, streamed
    // fragments) are folded away: a reader wants what was asked, decided
    // and done; the lines are one click away, and always in the export.
    const engineeringBox = h('input', { id: 'show-engineering', type: 'checkbox' });
    engineeringBox.addEventListener('change', () => timeline.classList.toggle('hide-engineering', !engineeringBox.checked));
    const engineering = h('p', { class: 'engineering-toggle' }, engineeringBox, ' ',
      h('label', { for: 'show-engineering', text: "Show the model's usage and turn lines" }));
    const receipts = {
      status: h('p', { id: 'receipts-status', class: 'receipts-status', role: 'status' }),
      problem: h('p', { id: 'receipts-problem', class: 'receipts-problem', role: 'alert', hidden: true }),
      list: h('ol', { id: 'receipts', class: 'receipts', 'aria-labelledby': 'receipts-heading' }),
      empty: h('p', { id: 'no-receipts', class: 'empty', hidden: true }),
    };

    view.append(
      h('p', { class: 'back' }, h('a', { id: 'back', href: '#/', text: '\u2190 Pending warrants' })),
      h('div', { class: 'view-head' }, h('h1', { class: 'run-title', text: `Run ${runId}`, tabindex: '-1' }), refresh),
      actionsBox,
      h('section', { class: 'card run-summary' },
        kv('Status', status),
        kv('Cost', cost),
        kv('Ledger', chain),
        details),
      held,
      failure,
      finalBlock,
      follow,
      h('section', { class: 'receipts-section', 'aria-labelledby': 'receipts-heading' },
        h('h2', { id: 'receipts-heading', text: 'Receipts' }),
        receipts.status,
        receipts.problem,
        receipts.list,
        receipts.empty),
      h('h2', { text: 'Ledger' }),
      engineering,
      timeline);

    /** Everything the ledger has said so far, by seq. */
    const events = new Map();
    // Names the page shows instead of ids, as they come in: the matter's
    // (the registry, counsel and firm admins only) and, per warrant, who
    // decided it and as what (the ledger's approval.decided).
    let lastRun = null;
    let matterNames = null;
    const deciders = new Map();
    loadMatterNames(ctx.signal).then((names) => {
      matterNames = names;
      if (ctx.alive && lastRun) renderInfo(lastRun);
    }).catch(() => { /* left the view: ids it is */ });
    let lastSeq = 0;

    const renderInfo = (run) => {
      lastRun = run;
      const s = str(run?.status) || 'unknown';
      status.textContent = s;
      status.className = `run-status status-${classToken(s)}`;

      const costUsd = str(run?.cost_usd) || '0';
      const cap = str(run?.cost_cap_usd);
      cost.textContent = cap ? `$${costUsd} of $${cap} cap` : `$${costUsd} (no cap)`;

      const ledger = run?.ledger && typeof run.ledger === 'object' ? run.ledger : null;
      if (ledger) {
        const seq = Number.isSafeInteger(ledger.head_seq) ? ledger.head_seq : null;
        let text = 'chain verified';
        if (seq !== null) text += ledger.verified === true ? ` (signed head seq ${seq}, MAC checked)` : ` (signed head seq ${seq})`;
        chain.textContent = text;
        chain.className = 'chain ok';
        chain.title = [str(ledger.head_hash) && `head hash ${str(ledger.head_hash)}`, str(ledger.key_id) && `key ${str(ledger.key_id)}`]
          .filter(Boolean).join(', ');
      } else {
        chain.textContent = 'chain not checked';
        chain.className = 'chain';
        chain.removeAttribute('title');
      }

      details.replaceChildren(
        kv('Agent', h('code', { text: str(run?.agent_key) })),
        kv('Model', h('code', { text: str(run?.model_id) })),
        kv('Matter', matterNames?.get(str(run?.matter_id))
          ? h('span', { text: matterNames.get(str(run?.matter_id)), title: str(run?.matter_id) })
          : h('code', { text: str(run?.matter_id) })),
        kv('Tokens', h('span', { text: `${str(run?.input_tokens, '0')} in / ${str(run?.output_tokens, '0')} out` })));

      const pending = s === 'held' && run?.pending_approval && typeof run.pending_approval === 'object' ? run.pending_approval : null;
      held.hidden = !pending;
      held.replaceChildren();
      if (pending) {
        held.append(`Held on a warrant for ${str(pending.tool_name) || 'a tool call'} (${str(pending.risk_tier) || 'unknown tier'}). `,
          h('a', { href: '#/', text: 'Decide it on the desk' }));
      }

      const actions = Array.isArray(run?.actions) ? run.actions : [];
      const notDone = Number(run?.actions_not_done) || 0;
      actionsBox.hidden = actions.length === 0;
      actionsBox.className = notDone > 0 ? 'run-actions not-done' : 'run-actions all-done';
      const plural = (n) => (n === 1 ? '1 action' : `${n} actions`);
      actionsHeading.textContent = notDone > 0
        ? (notDone === actions.length ? `${plural(notDone)} not done` : `${notDone} of ${plural(actions.length)} not done`)
        : `${actions.length === 1 ? 'The action' : `All ${actions.length} actions`} done`;
      actionsList.replaceChildren(...actions.map((a) => {
        const words = str(a?.words);
        // Who signed what went out, by name, as the ledger says.
        const d = deciders.get(str(a?.approval_id));
        const by = d ? ` by ${d.name}${d.as ? ` (${d.as})` : ''}` : ' by counsel';
        const done = `${str(a?.tool_name)} done${a?.edited ? `, as edited${by}${d?.changes ? `: ${d.changes}` : ''}` : str(a?.approval_id) ? `, as signed${by}` : ''}`;
        return h('li', { class: words ? 'action not-done' : 'action done', text: words || done });
      }));

      const finalText = str(run?.final_text);
      const gone = run?.content_destroyed && typeof run.content_destroyed === 'object' ? run.content_destroyed : null;
      finalBlock.hidden = !finalText && !gone;
      final.replaceChildren();
      if (finalText) appendVisible(final, finalText);
      if (gone) {
        // The content was destroyed with its key: say when and why, never
        // a blank as if the run had said nothing.
        final.append(h('span', { id: 'run-content-destroyed', class: 'content-destroyed',
          text: `Content destroyed ${str(gone.at)} (${str(gone.reason) === 'instruction' ? "on the firm's instruction" : 'retention period passed'}); ` +
            `backups hold its key until ${str(gone.backups_until)}. The run's record, cost and decisions remain.` }));
      }

      const f = run?.failure && typeof run.failure === 'object' ? run.failure : null;
      failure.hidden = !f;
      failure.replaceChildren();
      if (f) {
        failure.append(h('strong', { class: 'failure-kind', text: str(f.kind) || 'failed' }),
          str(f.stage) ? ` (${str(f.stage)})` : '',
          str(f.user_visible_message) ? `: ${str(f.user_visible_message)}` : '');
        const changed = toolChangeText(f.tool_change);
        if (changed) failure.append(appendVisible(h('span', { id: 'run-tool-change', class: 'tool-change' }), changed));
      }
    };

    /** Fetches the ledger lines after the last one seen, every page. */
    const loadEvents = async () => {
      let after = lastSeq;
      for (let page = 0; page < 10_000; page++) {
        // open=true: a sealed run's lines with their content opened, to read
        // (the lines as stored, which verify, are the export's).
        const url = `/v1/runs/${enc(runId)}/events?open=true${after > 0 ? `&after_seq=${after}` : ''}`;
        const res = await api(url, { signal: ctx.signal, raw: true, accept: 'application/x-ndjson' });
        const lines = String(res.data).split('\n');
        lines.forEach((line, i) => {
          if (!line.trim()) return;
          let ev;
          try {
            ev = JSON.parse(line);
          } catch {
            ev = null;
          }
          if (!ev || typeof ev !== 'object' || !Number.isSafeInteger(ev.seq)) {
            // Show it rather than drop it: the ledger is the record.
            const key = `unreadable-${after}-${i}`;
            events.set(key, { seq: null, type: 'unreadable', created_at: '', payload: { line } });
            return;
          }
          events.set(ev.seq, ev);
          if (ev.seq > lastSeq) lastSeq = ev.seq;
        });
        const next = res.headers.get('X-Next-After-Seq');
        if (next === null) break;
        const n = Number(next);
        if (!Number.isSafeInteger(n) || n <= after) {
          throw new Problem({ status: res.status, title: 'Unreadable answer', detail: `the ledger's next page (X-Next-After-Seq: ${next}) does not move forward` });
        }
        after = n;
      }
      // Per warrant: the call as asked (run.blocked) and as counsel edited
      // it (approval.decided), so the page can say what changed.
      const asked = new Map();
      for (const ev of events.values()) {
        const a = ev.type === 'run.blocked' && isObject(ev.payload?.approval) ? ev.payload.approval : null;
        if (a && str(a.approval_request_id) && isObject(a.tool_input)) asked.set(str(a.approval_request_id), a.tool_input);
      }
      for (const ev of events.values()) {
        const p = ev.type === 'approval.decided' && ev.payload && typeof ev.payload === 'object' ? ev.payload : null;
        if (p && str(p.approval_request_id)) {
          const before = asked.get(str(p.approval_request_id));
          const diffs = before && isObject(p.edited_input) ? memberDiffs(before, p.edited_input) : [];
          deciders.set(str(p.approval_request_id), { name: str(p.decided_by_name) || str(p.decided_by), as: str(p.decided_as),
            changes: diffs.map((d) => `${d.member} ${d.detail ? `changed (${d.detail})` : d.change}`).join('; ') });
        }
      }
      if (lastRun) renderInfo(lastRun);
      renderTimeline(timeline, [...events.values()]);
    };

    /** Which look at the receipts is the page's own: a newer one (Refresh, the run's end) ends an older one. */
    let receiptsLook = 0;

    /**
     * The run's receipts, as the server checked them against the firm log.
     * While no checkpoint covers them yet (or, once the run has ended, its
     * end), looks again a few times (RECEIPTS_RETRY_MS). A request that
     * fails is shown in the section, not in the page's #error: the rest of
     * the run page stands without the receipts.
     */
    const loadReceipts = async (run) => {
      const look = ++receiptsLook;
      const mine = () => ctx.alive && look === receiptsLook;
      const terminal = TERMINAL.has(str(run?.status));
      try {
        for (let attempt = 0; ; attempt++) {
          const more = attempt < RECEIPTS_RETRY_MS.length;
          let again = false;
          receipts.list.setAttribute('aria-busy', 'true');
          try {
            const { data } = await api(`/v1/runs/${enc(runId)}/receipts`, { signal: ctx.signal });
            if (!mine()) return;
            const st = receiptsState(data, terminal);
            again = st.waiting && more;
            renderReceipts(receipts, st, again);
          } catch (err) {
            if (isAbort(err) || !mine()) return;
            again = err instanceof Problem && err.retryable && more;
            renderReceiptsError(receipts, err, again);
          } finally {
            if (mine()) receipts.list.removeAttribute('aria-busy');
          }
          if (!again) return;
          await sleep(RECEIPTS_RETRY_MS[attempt], ctx.signal);
          if (!mine()) return;
        }
      } catch (err) {
        if (!isAbort(err)) throw err; // a fault of this page's own
      }
    };

    /** The run, long-polled while it runs; then one consistent read for the chain. */
    const load = async () => {
      refresh.disabled = true;
      follow.textContent = 'Loading…';
      try {
        let run = (await api(`/v1/runs/${enc(runId)}?consistent=true`, { signal: ctx.signal })).data;
        renderInfo(run);
        loadReceipts(run);
        await loadEvents();
        setError('');

        const resumedUnder = justResumed.get(runId);
        justResumed.delete(runId);
        const graceUntil = resumedUnder ? Date.now() + HELD_GRACE_MS : 0;
        // Still the hold this page just released (the view may lag the resume)?
        const staleHold = (r) => r?.status === 'held' && Date.now() < graceUntil &&
          (!r.pending_approval || str(r.pending_approval.approval_request_id) === resumedUnder);
        const following = (r) => r?.status === 'running' || staleHold(r);

        let polled = false;
        let failures = 0;
        while (ctx.alive && following(run)) {
          follow.textContent = run.status === 'running' ? 'Following the run…' : 'Waiting for the run to resume…';
          try {
            if (run.status === 'held') await sleep(1500, ctx.signal); // ?wait answers at once while held
            run = (await api(`/v1/runs/${enc(runId)}?wait=${LONG_POLL_SECONDS}`, { signal: ctx.signal })).data;
            polled = true;
            failures = 0;
            renderInfo(run);
            await loadEvents();
            setError('');
          } catch (err) {
            if (isAbort(err) || !ctx.alive) throw err;
            showError(err);
            if (!(err instanceof Problem && err.retryable) || ++failures >= 5) throw err;
            await sleep(2000 * failures, ctx.signal);
          }
        }
        if (!ctx.alive) return;
        if (polled) {
          // The run has stopped: the server's chain check of the whole ledger.
          run = (await api(`/v1/runs/${enc(runId)}?consistent=true`, { signal: ctx.signal })).data;
          renderInfo(run);
          loadReceipts(run);
          await loadEvents();
        }
        follow.textContent = TERMINAL.has(str(run?.status)) ? '' : `The run is ${str(run?.status) || 'in an unknown state'}.`;
      } catch (err) {
        if (!ctx.alive || isAbort(err)) return;
        follow.textContent = 'Stopped following the run.';
        showError(err);
      } finally {
        if (ctx.alive) refresh.disabled = false;
      }
    };

    refresh.addEventListener('click', load);
    load();
  }

  /** The ledger as a list; consecutive turn.delta lines of one turn are grouped. */
  /** The ledger lines a reader of the run page need not see (folded). */
  const ENGINEERING = new Set(['model.usage', 'turn.completed', 'turn.delta']);

  function renderTimeline(ol, events) {
    const sorted = events.slice().sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
    const items = [];
    for (let i = 0; i < sorted.length; i++) {
      const ev = sorted[i];
      if (ev.type === 'turn.delta') {
        const turn = ev.payload?.turn;
        let j = i;
        let text = '';
        while (j < sorted.length && sorted[j].type === 'turn.delta' && sorted[j].payload?.turn === turn) {
          text += str(sorted[j].payload?.text);
          j++;
        }
        items.push(renderDeltaGroup(sorted.slice(i, j), text));
        i = j - 1;
        continue;
      }
      items.push(renderEvent(ev));
    }
    ol.replaceChildren(...items);
  }

  function eventHead(ev, summary) {
    return [
      h('span', { class: 'seq', text: ev.seq === null || ev.seq === undefined ? '?' : `#${ev.seq}` }), ' ',
      h('time', { class: 'created', datetime: str(ev.created_at), text: str(ev.created_at) }), ' ',
      h('span', { class: 'summary-line' }, h('span', { class: 'type', text: str(ev.type) || 'unknown' }), summary ? `: ${summary}` : ''),
    ];
  }

  function renderEvent(ev) {
    const { summary, note, text } = summarize(ev);
    const li = h('li', {
      class: `event event-${classToken(str(ev.type).replace(/\./g, '-'))}${ENGINEERING.has(str(ev.type)) ? ' engineering' : ''}`,
      'data-type': str(ev.type),
      'data-seq': ev.seq === null || ev.seq === undefined ? null : String(ev.seq),
    }, eventHead(ev, summary));
    if (note) li.append(appendVisible(h('div', { class: 'event-note' }), note));
    if (text) li.append(appendVisible(h('div', { class: 'event-text' }), text));
    return li;
  }

  function renderDeltaGroup(group, text) {
    const first = group[0];
    const last = group[group.length - 1];
    const turn = first.payload?.turn;
    const summary = `${group.length} fragment${group.length === 1 ? '' : 's'}${turn !== undefined ? ` of turn ${str(turn)}` : ''}` +
      (group.length > 1 ? ` (seq ${first.seq}\u2013${last.seq})` : '');
    const li = h('li', { class: 'event event-turn-delta engineering', 'data-type': 'turn.delta', 'data-seq': String(first.seq), 'data-seq-last': String(last.seq) },
      eventHead(first, summary));
    if (text) li.append(appendVisible(h('div', { class: 'event-text streamed' }), text));
    return li;
  }

  // ---------------------------------------------------------------------
  // A run's receipts: the signed evidence, as the server checked it
  // ---------------------------------------------------------------------

  /**
   * What GET /v1/runs/{id}/receipts says, in one of three states:
   *   verified: the receipts were found under a signed checkpoint of the
   *     firm log (complete: the run ended with every line covered);
   *   awaiting: no checkpoint covers the run yet;
   *   failed: the evidence failed a check (problem says which).
   * waiting: worth looking again (awaiting, or an ended run whose end no
   * checkpoint covers yet).
   */
  function receiptsState(data, terminal) {
    const list = Array.isArray(data?.receipts) ? data.receipts.filter((r) => r && typeof r === 'object') : [];
    const seqOf = (r) => (Number.isSafeInteger(r.seq) ? r.seq : Infinity);
    const receiptList = list.slice().sort((a, b) => seqOf(a) - seqOf(b));
    const checkpoint = Number.isSafeInteger(data?.checkpoint) ? data.checkpoint : 0;
    const problem = str(data?.problem);
    if (data?.verified === true) {
      const complete = data.complete === true;
      return { state: 'verified', checkpoint, complete, terminal, receipts: receiptList, waiting: terminal && !complete };
    }
    if (problem) {
      return { state: 'failed', checkpoint, problem, terminal, receipts: receiptList, waiting: false };
    }
    return { state: 'awaiting', checkpoint, terminal, receipts: receiptList, waiting: true };
  }

  /** The receipts section for a state (see receiptsState); again: the page will look again. */
  function renderReceipts(els, st, again) {
    const { status, problem, list, empty } = els;
    problem.hidden = st.state !== 'failed';
    problem.replaceChildren();
    status.hidden = false;
    // What the page does next: look again, or leave it to Refresh.
    const next = again ? '; checking again\u2026' : st.waiting ? '. Refresh to look again.' : '';
    switch (st.state) {
      case 'verified': {
        let text = `Verified against the firm log, checkpoint ${st.checkpoint}`;
        if (st.complete) text += ' \u2014 run complete: every line covered';
        else if (st.terminal) text += ' \u2014 the run\u2019s end awaits the next checkpoint';
        status.textContent = text + next;
        status.className = 'receipts-status ok';
        break;
      }
      case 'awaiting':
        status.textContent = `Awaiting the next checkpoint of the firm log${next}`;
        status.className = 'receipts-status pending';
        break;
      default:
        // The alert says it; the status line would only repeat it.
        status.textContent = '';
        status.className = 'receipts-status';
        status.hidden = true;
        problem.append('Evidence check failed: ');
        appendVisible(problem, st.problem);
    }
    list.classList.toggle('unverified', st.state !== 'verified');
    list.replaceChildren(...st.receipts.map(renderReceipt));
    empty.hidden = st.receipts.length > 0;
    empty.textContent = st.state === 'verified' ? `No receipt of this run is under checkpoint ${st.checkpoint} yet.` : 'No receipts to show.';
  }

  /** The receipts could not be read (the list shown, if any, stays). */
  function renderReceiptsError(els, err, again) {
    els.status.hidden = false;
    els.status.className = 'receipts-status bad';
    els.status.textContent = `The receipts could not be loaded: ${errorText(err)}${again ? '; trying again\u2026' : ''}`;
  }

  /** Untrusted text cut to n characters and "…" (all of it in the title), hidden characters made visible. */
  function shortCode(value, n, cls) {
    const s = str(value);
    const chars = Array.from(s);
    const el = h('code', { class: cls, title: chars.length > n ? s : null });
    return appendVisible(el, chars.length > n ? `${chars.slice(0, n).join('')}\u2026` : s);
  }

  function timeEl(value, cls) {
    return h('time', { class: cls, datetime: str(value), text: str(value) });
  }

  /** One receipt: kind, seq, tool, outcome, authority, when, the input's hash and the signing key. */
  function renderReceipt(r) {
    const kind = str(r.kind) || 'unknown';
    const seq = Number.isSafeInteger(r.seq) ? r.seq : null;
    const authority = str(r.authority);
    const li = h('li', {
      class: `receipt card receipt-${classToken(kind)}`,
      'data-kind': kind,
      'data-seq': seq === null ? null : String(seq),
      'data-authority': authority || null,
    });

    const heading = h('h3', { class: 'receipt-heading' },
      h('span', { class: 'receipt-kind', text: kind }), ' ',
      h('span', { class: 'seq', text: seq === null ? '#?' : `#${seq}` }));
    if (str(r.tool_name)) heading.append(' ', appendVisible(h('code', { class: 'receipt-tool' }), str(r.tool_name)));
    li.append(heading);

    const outcome = str(r.outcome) || 'unknown';
    const fields = [kv('Outcome', appendVisible(h('span', { class: `outcome outcome-${classToken(outcome)}` }), outcome))];
    if (authority === 'warrant') {
      fields.push(
        kv('Authority', h('span', { class: 'authority', text: 'warrant' })),
        kv('Warrant', shortCode(r.warrant_id, 8, 'warrant-id')),
        kv('Decided by', shortCode(r.decided_by, 8, 'decided-by')),
        kv('Decided as', appendVisible(h('span', { class: 'decided-as' }), str(r.decided_as))),
        kv('Approved at', timeEl(r.approved_at, 'approved-at')));
    } else if (authority === 'policy') {
      const tier = str(r.risk_tier) || 'unknown';
      fields.push(
        kv('Authority', h('span', { class: 'authority', text: 'policy' })),
        kv('Risk tier', h('span', { class: `tier tier-${TIERS.has(tier) ? tier : 'unknown'}`, text: tier })),
        kv('Matched policy', appendVisible(h('code', { class: 'matched-policy' }), str(r.matched_policy))));
    } else if (authority) {
      fields.push(kv('Authority', appendVisible(h('span', { class: 'authority' }), authority)));
    }
    if (str(r.reconciled_by)) fields.push(kv('Reconciled by', shortCode(r.reconciled_by, 8, 'reconciled-by')));
    if (str(r.failure_kind)) fields.push(kv('Failure', appendVisible(h('span', { class: 'failure-kind' }), str(r.failure_kind))));
    if (str(r.executed_at)) fields.push(kv('Executed at', timeEl(r.executed_at, 'executed-at')));
    if (str(r.started_at)) fields.push(kv('Started at', timeEl(r.started_at, 'started-at')));
    if (str(r.ended_at)) fields.push(kv('Ended at', timeEl(r.ended_at, 'ended-at')));
    if (str(r.input_sha256)) fields.push(kv('Input SHA-256', shortCode(r.input_sha256, 12, 'input-sha256')));
    fields.push(kv('Key', shortCode(r.key_id, 19, 'key-id'))); // "sha256:" and 12 hex digits
    li.append(h('div', { class: 'receipt-fields' }, fields));
    return li;
  }

  function decisionWord(d) {
    const s = str(d);
    return s === 'approve' ? 'approved' : s === 'deny' ? 'denied' : s || 'decided';
  }

  /**
   * What a tool_changed failure (the run view's failure.tool_change, or
   * run.failed's) says of the tool, in words: its system no longer offers
   * it with the input schema the catalog pinned, both hashes in full, and
   * the warrant whose signed call was refused. null when there is none.
   */
  function toolChangeText(tc) {
    if (!tc || typeof tc !== 'object') return null;
    const where = [str(tc.tool_name) || 'a tool', str(tc.tool_server) && `on ${str(tc.tool_server)}`].filter(Boolean).join(' ');
    const now = str(tc.current_schema_sha256) || 'no longer offered';
    let text = `${where}: the tool changed: pinned ${str(tc.pinned_schema_sha256) || '(none)'}, now ${now}. Nothing was sent.`;
    if (str(tc.approval_request_id)) {
      text += ` Warrant ${str(tc.approval_request_id)} was signed, and its call was refused: it will not run.`;
    }
    return text;
  }

  /** A one-line summary of a ledger line; every payload field may be absent. */
  function summarize(ev) {
    const p = ev.payload && typeof ev.payload === 'object' ? ev.payload : {};
    const join = (parts) => parts.filter(Boolean).join(', ');
    switch (ev.type) {
      case 'run.started':
        return { summary: join([str(p.agent_key) && `agent ${str(p.agent_key)}`, str(p.model_id) && `model ${str(p.model_id)}`, str(p.matter_id) && `matter ${str(p.matter_id)}`, str(p.cost_cap_usd) && `cap $${str(p.cost_cap_usd)}`]), text: str(p.counsel_message) };
      case 'turn.completed':
        return { summary: join([p.turn !== undefined && `turn ${str(p.turn)}`, str(p.stop_reason) && `stop: ${str(p.stop_reason)}`]), text: str(p.text) };
      case 'model.usage': {
        const inTok = p.input_tokens ?? p.usage?.input_tokens;
        const outTok = p.output_tokens ?? p.usage?.output_tokens;
        return { summary: `${str(inTok, '?')} in / ${str(outTok, '?')} out, $${str(p.cost_usd, '?')}` };
      }
      case 'tool.requested': {
        const rules = Array.isArray(p.fired_rules) ? p.fired_rules.map((r) => str(r?.id)).filter(Boolean) : [];
        const tags = join([str(p.risk_tier), str(p.action)]);
        return {
          summary: `${str(p.tool_name) || 'a tool'}${tags ? ` (${tags})` : ''}`,
          note: join([str(p.reason), rules.length && `rules: ${rules.join(' ')}`]),
        };
      }
      case 'tool.completed':
        return {
          summary: `${str(p.tool_name) || 'a tool'} ${str(p.status) || ''}`.trim() +
            (str(p.effect_ref) ? ` (effect ${str(p.effect_ref)})` : '') +
            (str(p.executed_input_sha256) ? `, edited input ${str(p.executed_input_sha256).slice(0, 12)}\u2026` : ''),
        };
      case 'run.blocked': {
        const a = p.approval && typeof p.approval === 'object' ? p.approval : {};
        return { summary: `waiting for a warrant on ${str(a.tool_name) || 'a tool call'}${str(a.approval_request_id) ? ` (${str(a.approval_request_id)})` : ''}` };
      }
      case 'approval.decided':
        return {
          summary: `${decisionWord(p.decision)}${str(p.decided_by_name) || str(p.decided_by) ? ` by ${str(p.decided_by_name) || str(p.decided_by)}` : ''}` +
            (str(p.decided_as) ? ` as ${str(p.decided_as)}` : '') +
            (str(p.edited_input_sha256) ? `, edited input ${str(p.edited_input_sha256).slice(0, 12)}\u2026` : ''),
          note: str(p.note) && `Note: ${str(p.note)}`,
        };
      case 'run.released':
        return { summary: `${decisionWord(p.decision)}${str(p.effect_ref) ? `, effect ${str(p.effect_ref)}` : ''}` };
      case 'run.completed':
        // The final answer is shown once, above the receipts.
        return { summary: str(p.stop_reason) && `stop: ${str(p.stop_reason)}; the final answer is above` };
      case 'run.failed': {
        const kind = str(p.failure_kind) || str(p.kind) || str(p.failure?.kind) || 'failed';
        const msg = str(p.user_visible_message) || str(p.failure?.user_visible_message);
        return { summary: `${kind}${msg ? ` \u2014 ${msg}` : ''}`, note: toolChangeText(p.tool_change) || '' };
      }
      case 'effect.reconciled':
        return {
          summary: join([`${str(p.tool_name) || 'an effect'} ${str(p.outcome)}`.trim(), str(p.reconciled_by) && `by ${str(p.reconciled_by)}`, str(p.external_ref) && `ref ${str(p.external_ref)}`]),
          note: str(p.note) && `Note: ${str(p.note)}`,
        };
      case 'content.destroyed': {
        const why = str(p.reason) === 'instruction'
          ? join([str(p.requested_by) && `on the instruction of ${str(p.requested_by)}`, str(p.confirmed_by) && `confirmed by ${str(p.confirmed_by)}`])
          : join([p.retention_days !== undefined && `retention of ${str(p.retention_days)} days`, str(p.retention_source) && `the ${str(p.retention_source)}'s`]);
        return {
          summary: `the run's content was destroyed${why ? ` (${why})` : ''}`,
          note: str(p.backups_until) && `Backups hold its key until ${str(p.backups_until)}.`,
        };
      }
      case 'unreadable':
        return { summary: 'a ledger line this page could not read', text: str(p.line) };
      default:
        return { summary: '' };
    }
  }

  // ---------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------

  async function start() {
    try {
      const res = await fetch(CONFIG_URL, { headers: { Accept: 'application/json' }, cache: 'no-store', credentials: 'omit' });
      if (!res.ok) throw await problemFrom(res);
      config = await res.json();
      if (!config || typeof config !== 'object') throw new Error('the sign-in configuration is not a JSON object');
    } catch (err) {
      config = null;
      renderSignIn(`The desk could not load its sign-in configuration: ${errorText(err)}`);
      return;
    }

    let redirectError = '';
    try {
      if (await finishOidcRedirect()) {
        signedIn();
        return;
      }
    } catch (err) {
      redirectError = errorText(err);
    }
    renderSignIn(redirectError);
  }

  start();
})();
