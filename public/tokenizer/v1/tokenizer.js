/*
 * binbatch tokenizer, v1. Mounts the hosted card frame into the merchant's page and relays its
 * messages. Card digits never pass through this script: they stay in the frame, which is served
 * from the tokenizer's own origin, and the page gets back a temp token.
 *
 *   <script src="https://<binbatch host>/tokenizer/v1/tokenizer.js"></script>
 *   const tokenizer = new BinbatchTokenizer({ publicKey: 'pub_…', container: '#card' });
 *   tokenizer.on('change', (state) => …);          // { brand, complete, fields: { number, expiration, cvc } }
 *   const result = await tokenizer.submit();      // { temp_token, expires_at, card: { bin, last4, brand, exp_month, exp_year } }
 *
 * This file never changes at this path (it is cached for a year); a change ships as /tokenizer/v2/.
 */
(function () {
  'use strict';

  var PROTOCOL = 'binbatch-tokenizer';
  var VERSION = 1;
  /** After the frame's load event, how long its first message may take before the page is told. */
  var READY_GRACE_MS = 3000;
  var DEFAULT_LOAD_TIMEOUT_MS = 15000;

  // The frame comes from wherever this script came from.
  var script = document.currentScript;
  var tokenizerOrigin = script && script.src ? new URL(script.src).origin : null;

  class BinbatchTokenizerError extends Error {
    /**
     * code: 'invalid_card' (see `fields`), 'refused' (the tokenizer said no: key, origin, rate),
     * 'unavailable' (the frame or the network failed), 'destroyed'.
     */
    constructor(code, message, fields) {
      super(message);
      this.name = 'BinbatchTokenizerError';
      this.code = code;
      this.fields = fields || {};
    }
  }

  class BinbatchTokenizer {
    #iframe;
    #listeners = { ready: [], change: [], error: [] };
    #pending = new Map();
    #nextId = 1;
    #ready = false;
    #failure = null;
    #waiters = [];
    #submission = null;
    #timers = [];
    #onMessage = (event) => this.#receive(event);

    /** options: { publicKey: 'pub_…', container: selector or Element, title?, loadTimeout? (ms) } */
    constructor(options) {
      var publicKey = options && options.publicKey;
      if (typeof publicKey !== 'string' || !publicKey.startsWith('pub_')) {
        throw new TypeError('BinbatchTokenizer: publicKey must be your public key (pub_…); a secret key must never be in a web page');
      }
      var container = typeof options.container === 'string' ? document.querySelector(options.container) : options.container;
      if (!(container instanceof Element)) throw new TypeError('BinbatchTokenizer: container ' + String(options.container) + ' was not found');
      if (tokenizerOrigin === null) throw new Error('BinbatchTokenizer: load tokenizer.js with a <script src="…"> tag');

      var iframe = document.createElement('iframe');
      iframe.src = tokenizerOrigin + '/tokenizer/v1/frame?key=' + encodeURIComponent(publicKey);
      iframe.title = options.title || 'Card details';
      iframe.setAttribute('scrolling', 'no');
      iframe.style.cssText = 'display:block;width:100%;height:0;border:0;overflow:hidden;background:transparent;';
      this.#iframe = iframe;

      window.addEventListener('message', this.#onMessage);
      iframe.addEventListener('load', () => {
        // The frame listens before its load event; a page that failed to load (refused by the
        // frame's CSP, say) never answers, and the merchant's page is told why it may be.
        this.#post({ type: 'init' });
        this.#later(READY_GRACE_MS, () => this.#fail(notLoaded()));
      });
      this.#later(options.loadTimeout || DEFAULT_LOAD_TIMEOUT_MS, () => this.#fail(notLoaded()));
      container.appendChild(iframe);
    }

    /** Adds a listener: 'ready' (), 'change' (state), 'error' (BinbatchTokenizerError). */
    on(event, listener) {
      if (!this.#listeners[event]) throw new TypeError('BinbatchTokenizer: unknown event ' + String(event));
      this.#listeners[event].push(listener);
      return this;
    }

    off(event, listener) {
      var list = this.#listeners[event] || [];
      var index = list.indexOf(listener);
      if (index >= 0) list.splice(index, 1);
      return this;
    }

    /** Tokenizes the card typed into the frame. A second call while one runs gets the same promise. */
    submit() {
      if (this.#submission) return this.#submission;
      this.#submission = this.#whenReady()
        .then(
          () =>
            new Promise((resolve, reject) => {
              var id = this.#nextId++;
              this.#pending.set(id, { resolve: resolve, reject: reject });
              this.#post({ type: 'submit', id: id });
            }),
        )
        .finally(() => {
          this.#submission = null;
        });
      return this.#submission;
    }

    focus(field) {
      this.#post({ type: 'focus', field: field || 'number' });
    }

    clear() {
      this.#post({ type: 'clear' });
    }

    destroy() {
      window.removeEventListener('message', this.#onMessage);
      this.#timers.forEach(clearTimeout);
      var error = new BinbatchTokenizerError('destroyed', 'the tokenizer was destroyed');
      this.#pending.forEach((pending) => pending.reject(error));
      this.#pending.clear();
      this.#waiters.forEach((waiter) => waiter.reject(error));
      this.#waiters = [];
      this.#failure = error;
      this.#iframe.remove();
    }

    #post(message) {
      var target = this.#iframe.contentWindow;
      message.source = PROTOCOL;
      message.v = VERSION;
      // The exact origin: if the frame navigated elsewhere, the browser drops the message.
      if (target) target.postMessage(message, tokenizerOrigin);
    }

    #receive(event) {
      if (event.origin !== tokenizerOrigin || event.source !== this.#iframe.contentWindow) return;
      var message = event.data;
      if (!message || message.source !== PROTOCOL || message.v !== VERSION) return;
      if (message.type === 'ready') {
        this.#resize(message.height);
        if (this.#ready) return;
        this.#ready = true;
        this.#failure = null;
        this.#timers.forEach(clearTimeout);
        this.#waiters.forEach((waiter) => waiter.resolve());
        this.#waiters = [];
        this.#emit('ready');
        if (message.state) this.#emit('change', message.state);
      } else if (message.type === 'resize') {
        this.#resize(message.height);
      } else if (message.type === 'change') {
        this.#emit('change', message.state);
      } else if (message.type === 'result') {
        var pending = this.#pending.get(message.id);
        if (!pending) return;
        this.#pending.delete(message.id);
        if (message.ok) pending.resolve(message.result);
        else pending.reject(new BinbatchTokenizerError(message.error.code, message.error.message, message.error.fields));
      }
    }

    #resize(height) {
      if (typeof height === 'number' && height >= 0) this.#iframe.style.height = Math.ceil(height) + 'px';
    }

    #whenReady() {
      if (this.#ready) return Promise.resolve();
      if (this.#failure) return Promise.reject(this.#failure);
      return new Promise((resolve, reject) => this.#waiters.push({ resolve: resolve, reject: reject }));
    }

    #fail(error) {
      if (this.#ready || this.#failure) return;
      this.#failure = error;
      this.#waiters.forEach((waiter) => waiter.reject(error));
      this.#waiters = [];
      this.#emit('error', error);
    }

    #later(ms, fn) {
      this.#timers.push(setTimeout(fn, ms));
    }

    #emit(event, value) {
      this.#listeners[event].slice().forEach((listener) => {
        try {
          listener(value);
        } catch (error) {
          // A failing listener must not stop the others, nor hide its error.
          setTimeout(() => {
            throw error;
          });
        }
      });
    }
  }

  function notLoaded() {
    return new BinbatchTokenizerError(
      'unavailable',
      'the card form did not load: check the public key, and that this page\'s origin (' +
        window.location.origin +
        ") is in the merchant's tokenizer_origins",
    );
  }

  BinbatchTokenizer.Error = BinbatchTokenizerError;
  window.BinbatchTokenizer = BinbatchTokenizer;
})();
