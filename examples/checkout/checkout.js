// The demo shop's checkout script: mounts the tokenizer, gets a token, and asks the shop's own
// backend (which holds the secret key) for the card's lookup answer. It never sees a card digit.
(function () {
  'use strict';

  var root = document.querySelector('main.checkout');
  var form = document.getElementById('pay');
  var button = document.getElementById('submit');
  var status = document.getElementById('status');
  var resultSection = document.getElementById('result');
  var FIELD_NAMES = { number: 'Card number', expiration: 'Expiration', cvc: 'CVC' };

  function say(text, kind) {
    status.textContent = text.charAt(0).toUpperCase() + text.slice(1);
    status.className = 'status' + (kind ? ' ' + kind : '');
  }

  function fill(list, rows) {
    list.replaceChildren();
    rows.forEach(function (row) {
      var dt = document.createElement('dt');
      dt.textContent = row[0];
      var dd = document.createElement('dd');
      dd.textContent = row[1];
      list.append(dt, dd);
    });
  }

  if (typeof window.BinbatchTokenizer !== 'function') {
    say('The tokenizer script did not load from ' + root.dataset.tokenizerUrl + ': is npm run dev running?', 'error');
    button.disabled = true;
    return;
  }

  var tokenizer = new window.BinbatchTokenizer({ publicKey: root.dataset.publicKey, container: '#card' });
  button.disabled = true; // until the card form is ready
  tokenizer.on('error', function (error) {
    say(error.message, 'error');
    button.disabled = true;
  });
  tokenizer.on('ready', function () {
    button.disabled = false;
    if (status.classList.contains('error')) say('');
  });
  tokenizer.on('change', function (state) {
    // Validity and brand only: the page could show a brand logo, or enable the button when complete.
    root.dataset.cardComplete = String(state.complete);
    root.dataset.cardBrand = state.brand || '';
  });

  form.addEventListener('submit', async function (event) {
    event.preventDefault();
    button.disabled = true;
    resultSection.hidden = true;
    say('Tokenizing…');
    try {
      var result = await tokenizer.submit();
      fill(document.getElementById('token'), [
        ['Token', result.temp_token],
        ['Expires', new Date(result.expires_at).toLocaleTimeString()],
        ['Card', (result.card.brand || 'card') + ' · BIN ' + result.card.bin + ' · last 4 ' + result.card.last4],
        ['Expiration', String(result.card.exp_month).padStart(2, '0') + '/' + result.card.exp_year],
      ]);
      say('Looking the card up through the shop backend…');
      var response = await fetch('/api/lookup', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ temp_token: result.temp_token, state: document.getElementById('state').value }),
      });
      var answer = await response.json();
      if (!response.ok) throw new Error('lookup failed: ' + (answer.msg || response.status));
      fill(
        document.getElementById('lookup'),
        Object.keys(answer).map(function (name) {
          return [name, String(answer[name])];
        }),
      );
      resultSection.hidden = false;
      say('Token received; lookup done.', 'ok');
    } catch (error) {
      if (error && error.code === 'invalid_card') {
        var problems = Object.keys(error.fields).map(function (field) {
          return (FIELD_NAMES[field] || field) + ': ' + error.fields[field];
        });
        say('Check the card details. ' + problems.join(' '), 'error');
      } else {
        say(error && error.message ? error.message : String(error), 'error');
      }
    } finally {
      button.disabled = false;
    }
  });
})();
