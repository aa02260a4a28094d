// The console's session, shared by its pages (loaded first; classic scripts share one global scope):
// requests to this origin with the session cookie (set HttpOnly by the server at sign-in) and the
// CSRF token the session answers, held here only (never in storage, never in a URL), signing out,
// and a field's error message.
'use strict';

const $ = (id) => document.getElementById(id);

const consoleSession = {
  csrfToken: null,
  // What the page shows when a request answers 401 (the session ended); it is told the request's path.
  onUnauthorized: (_path) => {},
};

async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: 'same-origin' };
  if (method !== 'GET' && consoleSession.csrfToken) init.headers['X-CSRF-Token'] = consoleSession.csrfToken;
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let json = null;
  try {
    json = await response.json();
  } catch {
    json = null;
  }
  if (response.status === 401) consoleSession.onUnauthorized(path);
  return { status: response.status, ok: response.ok, json, msg: json && typeof json.msg === 'string' ? json.msg : `HTTP ${response.status}` };
}

// A form field's message, and whether assistive technology reads the field as invalid.
function setFieldError(input, errorEl, message) {
  errorEl.textContent = message;
  input.setAttribute('aria-invalid', message ? 'true' : 'false');
}

// The Sign out button: ends the session on the server, then the page shows it (`after`).
function bindSignOut(after) {
  $('sign-out').addEventListener('click', async () => {
    await api('DELETE', '/console/session');
    consoleSession.csrfToken = null;
    after();
  });
}
