// The console's Transactions page: search the merchant's transactions (the same request and answer
// as POST /api/transaction/search, through /console/transactions/search with session.js's api()),
// page with the answer's cursor, read a transaction's lifecycle, export the search to a CSV. Text is written with textContent only (the page's CSP
// refuses every HTML-parsing sink). Sign-in happens on /console.
'use strict';

const PAGE_SIZE = 20;
// The search being paged: its body, and the cursors of the pages seen (cursors[i] opens page i).
let current = null;
let cursors = [null];
let pageIndex = 0;
let exportTimer = null;

consoleSession.onUnauthorized = () => signedOut();

function signedOut() {
  consoleSession.csrfToken = null;
  $('workspace').hidden = true;
  $('who').hidden = true;
  $('signed-out').hidden = false;
}

// Signing in again happens on the batch page.
bindSignOut(() => location.assign('/console'));

const money = (minor) => `$${(Number(minor) / 100).toFixed(2)}`;
const when = (iso) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, '') : '—');
const words = (value) => String(value).replaceAll('_', ' ');

/** The search body from the form; null (with the field's error shown) when a field is wrong. */
function searchBody() {
  const body = { limit: PAGE_SIZE };
  let ok = true;
  const from = $('from-date').value;
  const to = $('to-date').value;
  setFieldError($('to-date'), $('dates-error'), '');
  if (from && to && from > to) {
    setFieldError($('to-date'), $('dates-error'), '"Created to" must not be before "Created from".');
    ok = false;
  }
  if (from || to) {
    body.created_at = {};
    if (from) body.created_at.start_date = `${from}T00:00:00Z`;
    if (to) body.created_at.end_date = `${to}T23:59:59Z`;
  }
  if ($('status').value) body.status = { operator: '=', value: $('status').value };
  if ($('type').value) body.type = { operator: '=', value: $('type').value };
  const order = $('order-id').value.trim();
  setFieldError($('order-id'), $('order-id-error'), '');
  if (order) {
    if (!/^[A-Za-z0-9]{1,17}$/.test(order)) {
      setFieldError($('order-id'), $('order-id-error'), 'An order number is 1 to 17 letters or digits.');
      ok = false;
    } else body.order_id = { operator: '=', value: order };
  }
  const amount = $('amount').value.trim();
  setFieldError($('amount'), $('amount-error'), '');
  if (amount) {
    const match = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(amount);
    if (!match) {
      setFieldError($('amount'), $('amount-error'), 'Write an amount in dollars, like 12.50.');
      ok = false;
    } else body.amount = { operator: $('amount-operator').value, value: Number(match[1]) * 100 + Number((match[2] || '').padEnd(2, '0')) };
  }
  const lastFour = $('last-four').value.trim();
  setFieldError($('last-four'), $('last-four-error'), '');
  if (lastFour) {
    if (!/^\d{4}$/.test(lastFour)) {
      setFieldError($('last-four'), $('last-four-error'), 'The last four are 4 digits.');
      ok = false;
    } else body.last_four = { operator: '=', value: lastFour };
  }
  return ok ? body : null;
}

async function runSearch() {
  const body = { ...current };
  const cursor = cursors[pageIndex];
  if (cursor) body.cursor = cursor;
  $('results-error').textContent = '';
  const result = await api('POST', '/console/transactions/search', body);
  if (!result.ok) {
    $('results-error').textContent = result.msg;
    return;
  }
  const answer = result.json;
  cursors[pageIndex + 1] = answer.next_cursor;
  const count = answer.total_count_exact ? String(answer.total_count) : `at least ${answer.total_count}`;
  const windowText = answer.window.defaulted ? ' in the last four months' : '';
  $('results-count').textContent = `${count} transaction${answer.total_count === 1 ? '' : 's'}${windowText}.`;
  renderRows(answer.data);
  const first = pageIndex * PAGE_SIZE + 1;
  $('page-label').textContent = answer.data.length === 0 ? 'No results' : `${first}–${first + answer.data.length - 1} of ${count}`;
  $('page-prev').disabled = pageIndex === 0;
  $('page-next').disabled = answer.next_cursor === null;
}

function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  row.append(td);
  return td;
}

function renderRows(records) {
  const body = $('results-rows');
  body.replaceChildren();
  for (const record of records) {
    const row = document.createElement('tr');
    cell(row, when(record.created_at), 'num');
    const idCell = document.createElement('td');
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'link';
    open.textContent = record.id;
    open.setAttribute('aria-label', `Details of ${record.id}`);
    open.addEventListener('click', () => showDetail(record.id));
    idCell.append(open);
    row.append(idCell);
    cell(row, record.type);
    cell(row, words(record.status));
    cell(row, money(record.amount), 'num');
    cell(row, record.order_id || '—');
    cell(row, record.masked_account || '—', 'num');
    body.append(row);
  }
}

async function showDetail(id) {
  const section = $('detail');
  section.hidden = false;
  $('detail-error').textContent = '';
  $('detail-title').textContent = 'Transaction';
  $('detail-id').textContent = id;
  $('detail-facts').replaceChildren();
  $('lifecycle').replaceChildren();
  const result = await api('GET', `/console/transactions/${encodeURIComponent(id)}`);
  if (!result.ok) {
    $('detail-error').textContent = result.msg;
    return;
  }
  const { record, events } = result.json.data;
  $('detail-title').textContent = `${record.type} of ${money(record.amount)}: ${words(record.status)}`;
  const facts = [
    ['Status', words(record.status)],
    ['Response', `${record.response} (${record.response_code}) ${record.processor_response_text || ''}`],
    ['Amount', money(record.amount)],
    ['Captured', money(record.amount_captured)],
    ['Settled', money(record.amount_settled)],
    ['Refunded', money(record.amount_refunded)],
    ['Card', record.masked_account || '—'],
    ['Order', record.order_id || '—'],
    ['Settlement batch', record.settlement_batch_id || '—'],
    ['Source', record.transaction_source],
  ];
  for (const [name, value] of facts) {
    const div = document.createElement('div');
    const dt = document.createElement('dt');
    dt.textContent = name;
    const dd = document.createElement('dd');
    dd.textContent = value;
    div.append(dt, dd);
    $('detail-facts').append(div);
  }
  for (const event of events) {
    const item = document.createElement('li');
    const amount = event.amount > 0 ? ` ${money(event.amount)}` : '';
    const reference = event.reference ? (event.kind === 'settled' ? ` in ${event.reference}` : ` by ${event.reference}`) : '';
    const outcome = event.outcome ? `: ${words(event.outcome)}` : '';
    item.textContent = `${when(event.at)} ${event.kind}${amount}${reference}${outcome}`;
    $('lifecycle').append(item);
  }
  section.scrollIntoView({ block: 'nearest' });
}

$('search-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const body = searchBody();
  if (!body) return;
  current = body;
  cursors = [null];
  pageIndex = 0;
  $('detail').hidden = true;
  await runSearch();
});

$('page-next').addEventListener('click', async () => {
  if (!current || !cursors[pageIndex + 1]) return;
  pageIndex++;
  await runSearch();
});

$('page-prev').addEventListener('click', async () => {
  if (!current || pageIndex === 0) return;
  pageIndex--;
  await runSearch();
});

// ---- export ----

function exportFilters() {
  const body = searchBody();
  if (!body) return null;
  delete body.limit;
  return body;
}

function showExport(state) {
  $('export-status').hidden = false;
  const link = $('export-download');
  if (state.status === 'completed') {
    $('export-text').textContent = `Export ready: ${state.rows} row${state.rows === 1 ? '' : 's'}.`;
    link.href = `/console/transactions/export/${state.id}/download`;
    link.hidden = false;
    return true;
  }
  link.hidden = true;
  if (state.status === 'failed') {
    $('export-text').textContent = `Export failed: ${state.failure_reason}`;
    return true;
  }
  const total = state.total_count === null ? '' : ` of ${state.total_count}`;
  $('export-text').textContent = `Exporting… ${state.rows}${total} rows written.`;
  return false;
}

$('export-button').addEventListener('click', async () => {
  const body = exportFilters();
  if (!body) return;
  clearTimeout(exportTimer);
  const result = await api('POST', '/console/transactions/export', body);
  if (!result.ok) {
    $('export-status').hidden = false;
    $('export-text').textContent = `Export refused: ${result.msg}`;
    return;
  }
  const id = result.json.data.id;
  const poll = async () => {
    const state = await api('GET', `/console/transactions/export/${id}`);
    if (!state.ok) {
      $('export-text').textContent = state.msg;
      return;
    }
    if (!showExport(state.json.data)) exportTimer = setTimeout(poll, 1000);
  };
  showExport(result.json.data);
  exportTimer = setTimeout(poll, 500);
});

// ---- start: the session opened on /console ----

(async () => {
  const result = await api('GET', '/console/session');
  if (!result.ok) return;
  consoleSession.csrfToken = result.json.data.csrf_token;
  $('merchant-name').textContent = result.json.data.merchant_name;
  $('who').hidden = false;
  $('workspace').hidden = false;
  current = searchBody();
  await runSearch();
})();
