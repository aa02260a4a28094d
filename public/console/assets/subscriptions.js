// The Transactions page's list of subscriptions needing attention (failing, failed, error) with
// their last decline: GET /console/subscriptions/attention with the session cookie.
(() => {
  const rows = document.getElementById('attention-rows');
  const count = document.getElementById('attention-count');
  const error = document.getElementById('attention-error');
  if (!rows) return;
  const cell = (text) => {
    const td = document.createElement('td');
    td.textContent = text;
    return td;
  };
  const decline = (d) => (d ? `${d.date}: ${d.processor_response_code ?? ''} ${d.processor_response_text ?? ''}${d.never_retry ? ' (never retried)' : ''}`.trim() : '');
  fetch('/console/subscriptions/attention', { credentials: 'same-origin' })
    .then(async (response) => {
      if (response.status === 401) return;
      const body = await response.json();
      if (!response.ok) throw new Error(body.msg ?? `HTTP ${response.status}`);
      rows.replaceChildren(
        ...body.data.map((s) => {
          const tr = document.createElement('tr');
          tr.append(cell(s.id), cell(s.status), cell(s.customer.id), cell((s.amount / 100).toFixed(2)), cell(s.next_bill_date), cell(decline(s.last_decline)));
          return tr;
        }),
      );
      count.textContent = body.data.length === 0 ? 'None: every subscription is billing.' : `${body.data.length} subscription(s).`;
    })
    .catch((err) => {
      error.textContent = `Could not load subscriptions: ${err.message}`;
    });
})();
