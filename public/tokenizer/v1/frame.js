// The hosted card frame. Card digits live only in this document: they go to this service's own
// token endpoint and nowhere else. The page around the frame gets validity, the brand and, after
// a submit, the token with the card's BIN and last four digits.
import {
  brandLabel,
  checkCvc,
  checkExpiration,
  checkNumber,
  cvcLengths,
  detectBrand,
  digitsOf,
  formatExpiration,
  formatNumber,
  numberLengths,
} from './card-checks.js';

const PROTOCOL = 'binbatch-tokenizer';
const VERSION = 1;
const TOKEN_TIMEOUT_MS = 20_000;
const FIELDS = ['number', 'expiration', 'cvc'];
const SERVER_FIELDS = { cc_number: 'number', cc_expiration: 'expiration', cc_cvc: 'cvc' };

/** Filled in by the Worker from the merchant's tokenizer_origins. */
const allowedParents = (document.querySelector('meta[name="tokenizer-parent-origins"]')?.content ?? '')
  .split(' ')
  .filter(Boolean);
const publicKey = new URLSearchParams(location.search).get('key') ?? '';

const inputs = Object.fromEntries(FIELDS.map((name) => [name, document.getElementById(name)]));
const errorTexts = Object.fromEntries(FIELDS.map((name) => [name, document.getElementById(`${name}-error`)]));
const brandText = document.getElementById('brand');

/** Set by the first `init` message: the origin the browser reported for the page around us. */
let parentOrigin = null;
const touched = { number: false, expiration: false, cvc: false };
/** Errors the server gave for the current values; cleared when the field changes. */
const serverErrors = { number: null, expiration: null, cvc: null };
let submitted = false;
let busy = false;

if (window.parent === window) {
  // Opened on its own, not framed: there is no checkout to serve.
  document.getElementById('card-form').hidden = true;
  document.getElementById('standalone').hidden = false;
} else {
  window.addEventListener('message', onMessage);
  for (const name of FIELDS) {
    inputs[name].addEventListener('input', (event) => onInput(name, event));
    inputs[name].addEventListener('blur', () => {
      touched[name] = true;
      render();
    });
  }
  document.getElementById('card-form').addEventListener('submit', (event) => event.preventDefault());
  new ResizeObserver(() => post({ type: 'resize', height: contentHeight() })).observe(document.body);
}

function onMessage(event) {
  // Only the page around us, only if the merchant listed its origin, and never a second one.
  if (event.source !== window.parent || !allowedParents.includes(event.origin)) return;
  if (parentOrigin !== null && event.origin !== parentOrigin) return;
  const message = event.data;
  if (message === null || typeof message !== 'object' || message.source !== PROTOCOL || message.v !== VERSION) return;
  if (message.type === 'init') {
    parentOrigin = event.origin;
    post({ type: 'ready', height: contentHeight(), state: state() });
  } else if (parentOrigin === null) {
    return;
  } else if (message.type === 'submit' && Number.isSafeInteger(message.id)) {
    void submit(message.id);
  } else if (message.type === 'focus' && FIELDS.includes(message.field)) {
    inputs[message.field].focus();
  } else if (message.type === 'clear') {
    for (const name of FIELDS) {
      inputs[name].value = '';
      touched[name] = false;
      serverErrors[name] = null;
    }
    submitted = false;
    render();
  }
}

/** Every message names our protocol and version, and goes to the parent's exact origin. */
function post(message) {
  if (parentOrigin !== null) window.parent.postMessage({ source: PROTOCOL, v: VERSION, ...message }, parentOrigin);
}

function contentHeight() {
  return Math.ceil(document.body.getBoundingClientRect().height);
}

function onInput(name, event) {
  const input = inputs[name];
  serverErrors[name] = null;
  if (name === 'number') {
    // Reformat in groups of digits, keeping the caret after the same digit it followed.
    const caretDigits = digitsOf(input.value.slice(0, input.selectionStart ?? input.value.length)).length;
    const raw = digitsOf(input.value);
    const digits = raw.slice(0, Math.max(...numberLengths(detectBrand(raw))));
    input.value = formatNumber(digits);
    placeCaret(input, caretDigits);
  } else if (name === 'expiration') {
    const deleting = event.inputType?.startsWith('delete') ?? false;
    const atEnd = input.selectionStart === input.value.length;
    input.value = formatExpiration(input.value, deleting);
    if (atEnd) input.setSelectionRange(input.value.length, input.value.length);
  } else {
    input.value = digitsOf(input.value).slice(0, Math.max(...cvcLengths(detectBrand(digitsOf(inputs.number.value)))));
  }
  render();
}

function placeCaret(input, digitsBefore) {
  if (document.activeElement !== input) return;
  let position = 0;
  for (let seen = 0; position < input.value.length && seen < digitsBefore; position++) {
    if (/[0-9]/.test(input.value[position])) seen++;
  }
  input.setSelectionRange(position, position);
}

function checks() {
  const number = checkNumber(digitsOf(inputs.number.value));
  return {
    number,
    expiration: checkExpiration(inputs.expiration.value, new Date()),
    cvc: checkCvc(digitsOf(inputs.cvc.value), number.brand),
  };
}

/** The error a field shows now: the server's, a definite one, or any once the user left it or submitted. */
function shownError(name, check) {
  if (serverErrors[name]) return serverErrors[name];
  if (check.complete) return null;
  if (check.definite) return check.error;
  if (submitted || (touched[name] && !check.empty)) return check.error;
  return null;
}

/** What the page around us may know: validity and brand, never a digit. */
function state(current = checks()) {
  const fields = {};
  for (const name of FIELDS) {
    const check = current[name];
    fields[name] = { empty: check.empty, complete: check.complete && !serverErrors[name], error: shownError(name, check) };
  }
  return {
    brand: current.number.brand ?? null,
    complete: FIELDS.every((name) => fields[name].complete),
    fields,
  };
}

function render() {
  const current = checks();
  const publicState = state(current);
  brandText.textContent = brandLabel(current.number.brand);
  for (const name of FIELDS) {
    const error = publicState.fields[name].error;
    errorTexts[name].textContent = error ?? '';
    inputs[name].setAttribute('aria-invalid', error ? 'true' : 'false');
  }
  post({ type: 'change', state: publicState });
  return publicState;
}

function setBusy(value) {
  busy = value;
  for (const name of FIELDS) inputs[name].readOnly = value;
  document.body.setAttribute('aria-busy', value ? 'true' : 'false');
}

async function submit(id) {
  if (busy) return;
  submitted = true;
  const current = checks();
  const publicState = render();
  if (!publicState.complete) {
    inputs[FIELDS.find((name) => !publicState.fields[name].complete)].focus();
    return post({ type: 'result', id, ok: false, error: invalidCard(publicState) });
  }
  const digits = digitsOf(inputs.number.value);
  const expiration = `${String(current.expiration.month).padStart(2, '0')}/${String(current.expiration.year % 100).padStart(2, '0')}`;
  setBusy(true);
  try {
    const response = await fetch('/api/tokenizer/token', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: publicKey,
        // The server checks this page is still allowed for the merchant (see the README, "Tokenizer").
        'Tokenizer-Parent-Origin': parentOrigin,
      },
      body: JSON.stringify({ cc_number: digits, cc_expiration: expiration, cc_cvc: digitsOf(inputs.cvc.value) }),
      credentials: 'omit',
      cache: 'no-store',
      signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
    });
    const body = await response.json().catch(() => null);
    if (response.status === 201 && typeof body?.data?.temp_token === 'string') {
      return post({
        type: 'result',
        id,
        ok: true,
        result: {
          temp_token: body.data.temp_token,
          expires_at: body.data.expires_at,
          card: {
            bin: digits.slice(0, 6),
            last4: digits.slice(-4),
            brand: current.number.brand ?? null,
            exp_month: current.expiration.month,
            exp_year: current.expiration.year,
          },
        },
      });
    }
    if (response.status === 400 && applyServerErrors(body)) {
      return post({ type: 'result', id, ok: false, error: invalidCard(render()) });
    }
    const message = typeof body?.msg === 'string' ? body.msg : `the tokenizer answered ${response.status}`;
    post({ type: 'result', id, ok: false, error: { code: 'refused', message, fields: {} } });
  } catch {
    post({ type: 'result', id, ok: false, error: { code: 'unavailable', message: 'the tokenizer could not be reached', fields: {} } });
  } finally {
    setBusy(false);
  }
}

/** The server's field errors in the frame's words (it never quotes the value back, nor do we). */
function applyServerErrors(body) {
  const found = [];
  const errors = Array.isArray(body?.errors) ? body.errors : typeof body?.msg === 'string' ? [{ field: body.msg.split(':')[0], msg: body.msg }] : [];
  for (const { field, msg } of errors) {
    const name = SERVER_FIELDS[field];
    if (!name) continue;
    serverErrors[name] =
      name === 'number'
        ? 'The card number is not valid.'
        : name === 'expiration'
          ? /expired/.test(msg) ? 'The card has expired.' : 'The expiration date is not valid.'
          : 'The CVC is not valid.';
    found.push(name);
  }
  return found.length > 0;
}

function invalidCard(publicState) {
  const fields = {};
  for (const name of FIELDS) {
    if (publicState.fields[name].error) fields[name] = publicState.fields[name].error;
  }
  return { code: 'invalid_card', message: 'the card details are not complete or not valid', fields };
}
