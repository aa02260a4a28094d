// The batch console. Talks to this origin only: /console/* through session.js's api() (the session
// cookie and the CSRF token), and the API's live progress stream, which accepts the same cookie.
// Text is written with textContent only: the page's CSP refuses every HTML-parsing sink
// (trusted-types 'none').
'use strict';

const PAGE_SIZE = 10;

let historyOffset = 0;
let stream = null;
let watchedId = null;
// The watched batch's last known record (what Pause/Resume and Cancel act on).
let watched = null;
// The next read of the shown batch's receipt counts, while some are still waiting.
let receiptsTimer = null;

function show(signedIn) {
  $('sign-in-section').hidden = signedIn;
  $('workspace').hidden = !signedIn;
  $('who').hidden = !signedIn;
}

// A request of the signed-in page answered 401: the session ended (a refused sign-in is not that).
consoleSession.onUnauthorized = (path) => {
  if (path !== '/console/session') signedOut('Your session ended: sign in again.');
};

function signedIn(session) {
  consoleSession.csrfToken = session.csrf_token;
  $('merchant-name').textContent = session.merchant_name;
  show(true);
  historyOffset = 0;
  loadHistory();
}

function signedOut(message) {
  consoleSession.csrfToken = null;
  stopWatching();
  $('batch-section').hidden = true;
  show(false);
  setFieldError($('api-key'), $('api-key-error'), message || '');
  $('api-key').focus();
}

// ---- sign in / out ----

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('api-key');
  const key = input.value.trim();
  if (key === '') {
    setFieldError(input, $('api-key-error'), 'Enter your secret API key (api_…).');
    input.focus();
    return;
  }
  const result = await api('POST', '/console/session', { api_key: key });
  if (!result.ok) {
    setFieldError(input, $('api-key-error'), result.status === 401 ? `Sign-in refused: ${result.msg}.` : result.msg);
    input.focus();
    return;
  }
  input.value = '';
  setFieldError(input, $('api-key-error'), '');
  signedIn(result.json.data);
  $('csv-file').focus();
});

bindSignOut(() => signedOut(''));

// ---- upload ----

const dropZone = $('drop-zone');
dropZone.addEventListener('dragover', (event) => {
  event.preventDefault();
  dropZone.classList.add('dragging');
});
dropZone.addEventListener('dragleave', () => dropZone.classList.remove('dragging'));
dropZone.addEventListener('drop', (event) => {
  event.preventDefault();
  dropZone.classList.remove('dragging');
  if (event.dataTransfer && event.dataTransfer.files.length > 0) {
    $('csv-file').files = event.dataTransfer.files;
    setFieldError($('csv-file'), $('csv-file-error'), '');
  }
});
$('csv-file').addEventListener('change', () => {
  setFieldError($('csv-file'), $('csv-file-error'), '');
  $('upload-anyway').hidden = true;
  $('check-result').hidden = true;
});

$('upload-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('csv-file');
  const file = input.files && input.files[0];
  if (!file) {
    setFieldError(input, $('csv-file-error'), 'Choose a CSV file first.');
    input.focus();
    return;
  }
  await sendFile(file, false);
});

// A file checked before it is uploaded (POST /console/batches/check, as ?validate_only=true): the
// rows a run would refuse, and what it would run, with nothing stored or charged.
$('check-button').addEventListener('click', async () => {
  const input = $('csv-file');
  const file = input.files && input.files[0];
  if (!file) {
    setFieldError(input, $('csv-file-error'), 'Choose a CSV file first.');
    input.focus();
    return;
  }
  const button = $('check-button');
  const out = $('check-result');
  button.disabled = true;
  button.textContent = 'Checking…';
  try {
    const form = new FormData();
    form.append('file', file, file.name);
    const result = await api('POST', '/console/batches/check', form);
    out.replaceChildren();
    out.hidden = false;
    if (!result.ok) {
      setFieldError(input, $('csv-file-error'), `The file would be refused: ${result.msg}`);
      out.hidden = true;
      return;
    }
    setFieldError(input, $('csv-file-error'), '');
    const report = result.json.data;
    const types = Object.entries(report.rows_by_type).map(([type, n]) => `${n} ${type}`).join(', ') || 'none';
    const totals = Object.entries(report.totals)
      .flatMap(([currency, byType]) => Object.entries(byType).map(([type, minor]) => `${type} ${(minor / 100).toFixed(2)} ${currency}`))
      .join(', ');
    const summary = document.createElement('p');
    summary.id = 'check-summary';
    summary.textContent =
      `${report.num_lines} rows checked: ${report.row_error_count} with errors. Would run: ${types}.` +
      (totals ? ` Totals: ${totals}.` : '') +
      (report.rows_without_amount ? ` ${report.rows_without_amount} capture or refund rows take the whole amount left.` : '') +
      ' Nothing was uploaded or charged.';
    out.append(summary);
    if (report.row_errors.length > 0) {
      const list = document.createElement('ul');
      list.id = 'check-errors';
      for (const error of report.row_errors.slice(0, 20)) {
        const item = document.createElement('li');
        item.textContent = `Line ${error.row}, ${error.column}: ${error.message}`;
        list.append(item);
      }
      out.append(list);
    }
  } finally {
    button.disabled = false;
    button.textContent = 'Check file';
  }
});

// The same file as an upload of the last 24 hours is refused (409, naming that batch): the person
// reads which batch it was, and may upload it anyway (?allow_duplicate=true).
$('upload-anyway').addEventListener('click', async () => {
  const input = $('csv-file');
  const file = input.files && input.files[0];
  if (file) await sendFile(file, true);
});

async function sendFile(file, allowDuplicate) {
  const input = $('csv-file');
  const button = $('upload-button');
  const anyway = $('upload-anyway');
  anyway.hidden = true;
  button.disabled = true;
  button.textContent = 'Uploading…';
  try {
    const form = new FormData();
    form.append('file', file, file.name);
    const result = await api('POST', `/console/batches${allowDuplicate ? '?allow_duplicate=true' : ''}`, form);
    if (!result.ok) {
      const duplicate = result.status === 409 && result.msg.includes('allow_duplicate');
      const msg = duplicate ? result.msg.replace(/; to charge its rows again.*$/, '. Upload it anyway to charge its rows again.') : result.msg;
      setFieldError(input, $('csv-file-error'), `The file was refused: ${msg}`);
      anyway.hidden = !duplicate;
      (duplicate ? anyway : input).focus();
      return;
    }
    setFieldError(input, $('csv-file-error'), '');
    input.value = '';
    watch(result.json.data);
    loadHistory();
  } finally {
    button.disabled = false;
    button.textContent = 'Upload';
  }
}

// ---- watching a batch ----

function stopWatching() {
  if (stream) stream.close();
  stream = null;
}

function formatDuration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 1) return 'less than a second';
  if (seconds < 90) return `about ${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `about ${minutes} min` : `about ${(minutes / 60).toFixed(1)} h`;
}

function watch(batch) {
  stopWatching();
  watchedId = batch.id;
  $('cancel-confirm').hidden = true;
  $('batch-section').hidden = false;
  $('summary').hidden = true;
  clearTimeout(receiptsTimer);
  $('batch-error').textContent = '';
  $('batch-rate').textContent = '—';
  $('batch-eta').textContent = '—';
  render(batch);
  if (batch.status === 'completed') return showSummary(batch);
  if (batch.status === 'failed') return showFailure(batch);
  // Rate: from the first processing event seen, so queueing time does not lower it.
  let first = null;
  const source = new EventSource(`/api/filebatch/${encodeURIComponent(batch.id)}/events`);
  stream = source;
  source.onmessage = (event) => {
    const record = JSON.parse(event.data);
    if (record.id !== watchedId) return;
    render(record);
    const now = performance.now();
    if (record.paused) {
      // No rate while paused; it is measured again from the resume.
      first = null;
      $('batch-rate').textContent = '—';
      $('batch-eta').textContent = 'paused';
    } else if (record.status === 'processing' || record.status === 'completed') {
      if (first === null) first = { at: now, lines: record.processed_lines };
      const elapsed = (now - first.at) / 1000;
      const done = record.processed_lines - first.lines;
      if (elapsed > 0 && done > 0) {
        const rate = done / elapsed;
        $('batch-rate').textContent = `${Math.round(rate).toLocaleString('en-US')} rows/s`;
        $('batch-eta').textContent = formatDuration((record.num_lines - record.processed_lines) / rate);
      }
    }
    if (record.status === 'completed' || record.status === 'failed') {
      stopWatching();
      if (record.status === 'completed') {
        $('batch-eta').textContent = 'done';
        showSummary(record);
      } else {
        showFailure(record);
      }
      loadHistory();
    }
  };
  source.onerror = () => {
    // EventSource reconnects by itself; a closed stream (CLOSED) will not come back.
    if (source.readyState === EventSource.CLOSED && stream === source) {
      $('batch-error').textContent = 'The progress stream closed. Reopen the batch from the history.';
    }
  };
}

function showFailure(record) {
  const reason = record.failure_reason || 'unknown reason';
  $('batch-eta').textContent = '—';
  $('batch-error').textContent = reason.startsWith('cancelled')
    ? `${reason === 'cancelled by the merchant' ? 'The batch was cancelled by you' : `The batch was ${reason}`}: ${(record.num_lines - record.processed_lines).toLocaleString('en-US')} rows did not run. Rows that ran stay charged; the API's partial download lists every row.`
    : `The batch failed (${reason}): no results can be downloaded. Upload the file again.`;
}

function render(record) {
  watched = record;
  const running = record.status !== 'completed' && record.status !== 'failed';
  $('batch-controls').hidden = !running;
  if (!running) $('cancel-confirm').hidden = true;
  else if (!$('cancel-confirm').hidden) $('cancel-confirm-text').textContent = cancelText(record);
  $('pause-button').textContent = record.paused ? 'Resume' : 'Pause';
  $('progress-label').textContent = record.paused ? 'Paused' : 'Lines processed';
  $('progress').dataset.paused = record.paused ? 'true' : 'false';
  $('batch-file').textContent = `${record.file_name} (${record.id})`;
  const bar = $('progress');
  const total = record.num_lines;
  const processed = record.processed_lines ?? 0;
  bar.setAttribute('aria-valuemax', String(total));
  bar.setAttribute('aria-valuenow', String(Math.min(processed, total)));
  bar.setAttribute('aria-valuetext', `${processed.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} lines`);
  bar.dataset.status = record.status;
  $('progress-fill').style.width = total > 0 ? `${(100 * Math.min(processed, total)) / total}%` : '0';
  $('batch-status').textContent = record.paused ? `${record.status} (paused)` : record.status;
  $('batch-lines').textContent = `${processed.toLocaleString('en-US')} / ${total.toLocaleString('en-US')}`;
}

async function showSummary(record) {
  const result = await api('GET', `/console/batches/${encodeURIComponent(record.id)}/summary`);
  if (!result.ok) {
    $('batch-error').textContent = `The results summary is not available: ${result.msg}`;
    return;
  }
  const summary = result.json.data;
  $('count-approved').textContent = summary.approved.toLocaleString('en-US');
  $('count-authorized').textContent = summary.authorized.toLocaleString('en-US');
  $('count-declined').textContent = summary.declined.toLocaleString('en-US');
  $('count-error').textContent = summary.error.toLocaleString('en-US');
  const rows = $('refused-rows');
  rows.replaceChildren();
  for (const row of summary.first_refused) {
    const tr = document.createElement('tr');
    for (const value of [row.line ?? '—', row.response, row.response_code ?? '—', row.reason]) {
      const td = document.createElement('td');
      td.textContent = String(value);
      tr.append(td);
    }
    rows.append(tr);
  }
  $('refused').hidden = summary.first_refused.length === 0;
  $('download').href = downloadPath(record.id);
  $('summary').hidden = false;
  showReceipts(record.id, summary.receipts);
}

// Receipts are sent paced behind processing (docs/receipts.md): while some still wait, their counts
// are read again every few seconds, for as long as this batch is the one shown.
const RECEIPTS_REFRESH_MS = 5000;

function showReceipts(id, receipts) {
  clearTimeout(receiptsTimer);
  const total = receipts.sent + receipts.queued + receipts.failed;
  $('receipts').hidden = total === 0;
  if (total === 0) return;
  $('receipts-sent').textContent = receipts.sent.toLocaleString('en-US');
  $('receipts-queued').textContent = receipts.queued.toLocaleString('en-US');
  $('receipts-failed').textContent = receipts.failed.toLocaleString('en-US');
  $('receipts-hint').textContent =
    receipts.queued > 0
      ? 'Receipts go out paced behind processing; these counts refresh until every one is sent.'
      : receipts.failed > 0
        ? 'A failed receipt shows why in its transaction (GET /api/transaction/{id}); POST /api/transaction/{id}/receipt sends it again.'
        : 'Every receipt was sent.';
  if (receipts.queued === 0) return;
  receiptsTimer = setTimeout(async () => {
    if (id !== watchedId) return;
    const result = await api('GET', `/console/batches/${encodeURIComponent(id)}/summary`);
    if (result.ok && id === watchedId) showReceipts(id, result.json.data.receipts);
  }, RECEIPTS_REFRESH_MS);
}

function downloadPath(id) {
  return `/console/batches/${encodeURIComponent(id)}/download`;
}

// ---- pause, resume, cancel ----

async function control(action) {
  if (!watched) return;
  const id = watched.id;
  const result = await api('POST', `/console/batches/${encodeURIComponent(id)}/${action}`);
  if (id !== watchedId) return;
  if (!result.ok) {
    $('batch-error').textContent = `The batch could not be ${action === 'cancel' ? 'cancelled' : action === 'pause' ? 'paused' : 'resumed'}: ${result.msg}`;
    return;
  }
  $('batch-error').textContent = '';
  render(result.json.data);
  if (result.json.data.status === 'failed') {
    stopWatching();
    showFailure(result.json.data);
  }
  loadHistory();
}

$('pause-button').addEventListener('click', () => control(watched && watched.paused ? 'resume' : 'pause'));

// Cancel asks first, saying how many rows will not run (chunks already running still finish); the
// count follows the progress stream while the question is open.
function cancelText(record) {
  const left = record.num_lines - record.processed_lines;
  return (
    `${record.file_name}: ${left.toLocaleString('en-US')} of ${record.num_lines.toLocaleString('en-US')} rows have not run yet and will not run ` +
    `(rows already being processed finish and are charged). Rows that ran stay charged. This cannot be undone.`
  );
}

$('cancel-button').addEventListener('click', () => {
  if (!watched) return;
  $('cancel-confirm-text').textContent = cancelText(watched);
  $('cancel-confirm').hidden = false;
  $('cancel-no').focus();
});
$('cancel-no').addEventListener('click', () => {
  $('cancel-confirm').hidden = true;
  $('cancel-button').focus();
});
$('cancel-yes').addEventListener('click', async () => {
  $('cancel-confirm').hidden = true;
  await control('cancel');
});

// ---- history ----

async function loadHistory() {
  const result = await api('GET', `/console/batches?limit=${PAGE_SIZE}&offset=${historyOffset}`);
  if (!result.ok) {
    $('history-error').textContent = `The history could not be loaded: ${result.msg}`;
    return;
  }
  $('history-error').textContent = '';
  const { data, total_count: total } = result.json;
  const rows = $('history-rows');
  rows.replaceChildren();
  if (data.length === 0) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 5;
    td.textContent = 'No batches yet.';
    tr.append(td);
    rows.append(tr);
  }
  for (const batch of data) {
    const tr = document.createElement('tr');
    const cells = [
      [batch.file_name, 'file'],
      [batch.paused ? `${batch.status} (paused)` : batch.status, ''],
      [`${(batch.processed_lines ?? 0).toLocaleString('en-US')} / ${batch.num_lines.toLocaleString('en-US')}`, 'num'],
      [new Date(batch.created_at).toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'short' }), 'num'],
    ];
    for (const [text, cls] of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
    }
    const actions = document.createElement('td');
    actions.className = 'actions';
    const view = document.createElement('button');
    view.type = 'button';
    view.className = 'secondary';
    view.textContent = 'View';
    view.setAttribute('aria-label', `View ${batch.file_name}`);
    view.addEventListener('click', () => {
      watch(batch);
      $('batch-title').focus();
    });
    actions.append(view);
    if (batch.status === 'completed') {
      const link = document.createElement('a');
      link.className = 'button';
      link.href = downloadPath(batch.id);
      link.setAttribute('download', '');
      link.textContent = 'Download results';
      link.setAttribute('aria-label', `Download results of ${batch.file_name}`);
      actions.append(link);
    }
    tr.append(actions);
    rows.append(tr);
  }
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  $('history-page').textContent = `Page ${Math.floor(historyOffset / PAGE_SIZE) + 1} of ${pages} (${total} ${total === 1 ? 'batch' : 'batches'})`;
  $('history-prev').disabled = historyOffset === 0;
  $('history-next').disabled = historyOffset + PAGE_SIZE >= total;
}

$('history-prev').addEventListener('click', () => {
  historyOffset = Math.max(0, historyOffset - PAGE_SIZE);
  loadHistory();
});
$('history-next').addEventListener('click', () => {
  historyOffset += PAGE_SIZE;
  loadHistory();
});

// ---- start ----

$('batch-title').tabIndex = -1;
api('GET', '/console/session').then((result) => {
  if (result.ok) signedIn(result.json.data);
  else signedOut('');
});
