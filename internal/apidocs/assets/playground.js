'use strict';
// The chatgw playground. Every URL is relative to the page's directory, so the
// page works when the gateway is mounted under a path prefix. The bearer token
// lives in this tab's sessionStorage only. Model output and error texts are
// inserted as text nodes, never parsed as HTML.
(function () {
  const root = new URL(location.pathname.replace(/\/playground\/?$/, '/'), location.href);
  const api = (path) => new URL(path, root);
  const $ = (id) => document.getElementById(id);
  const KEY_TOKEN = 'chatgw.playground.token';
  const KEY_USER = 'chatgw.playground.user';
  const KEY_MODEL = 'chatgw.playground.model';
  const store = window.sessionStorage;

  let history = []; // the /v1 conversation, kept by the page (the endpoint is stateless)
  let controller = null;

  function el(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids.flat()) {
      if (k === undefined || k === null || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }

  function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }

  function addMessage(role, text) {
    const body = el('div', 'text', text || '');
    const box = el('div', 'msg ' + role, el('div', 'who', role), body);
    $('transcript').append(box);
    scrollDown();
    return { box, body };
  }

  function addNotice(code, message) {
    $('transcript').append(el('div', 'msg notice', 'notice ', el('code', null, code || '?'), message ? ': ' + message : ''));
    scrollDown();
  }

  function docLink(code) {
    const a = el('a', null, 'docs/errors#' + code);
    a.href = api('docs/errors#' + encodeURIComponent(code)).href;
    a.target = '_blank';
    a.rel = 'noopener';
    return a;
  }

  // addError shows an error envelope: code, type, message and param.
  function addError(status, envelope, requestId) {
    const e = (envelope && envelope.error) || {};
    const box = el('div', 'msg error',
      el('div', 'who', status ? 'error, HTTP ' + status : 'error'),
      el('div', null, el('code', null, e.code || 'unknown'), e.type ? ' (' + e.type + ')' : '', ': ', e.message || ''),
      e.param ? el('div', null, 'param: ', el('code', null, e.param)) : null,
      envelope && envelope.available_fallbacks ? el('div', null, 'available fallbacks: ' + envelope.available_fallbacks.join(', ')) : null,
      envelope && envelope.required_consents ? el('div', null, 'consent needed for: ' + envelope.required_consents.map((c) => c.doc_name + ' (' + c.content_hash + ')').join(', ')) : null,
      e.code ? el('div', 'muted', 'See ', docLink(e.code)) : null,
      requestId ? el('div', 'muted', 'x-request-id: ' + requestId) : null);
    $('transcript').append(box);
    scrollDown();
  }

  function setMeta(res) {
    const parts = [];
    const add = (label, name) => { const v = res.headers.get(name); if (v) parts.push(label + ': ' + v); };
    add('x-request-id', 'x-request-id');
    add('conversation', 'gw-conversation-id');
    add('applied', 'gw-applied');
    add('GW-Notice', 'gw-notice');
    $('meta').textContent = parts.join(' \u00b7 ');
  }

  function headers(json) {
    const h = new Headers();
    const token = $('token').value.trim();
    if (token) h.set('Authorization', 'Bearer ' + token);
    const user = $('user').value.trim();
    if (user) h.set('GW-User-Id', user);
    if (json) h.set('Content-Type', 'application/json');
    return h;
  }

  // readError returns the error envelope of a failed response, or one made up
  // from its text when the body is not an envelope.
  async function readError(res) {
    const text = await res.text();
    try {
      const body = JSON.parse(text);
      if (body && body.error) return body;
    } catch (_) { /* not JSON */ }
    return { error: { code: 'http_' + res.status, message: text.slice(0, 500) || res.statusText } };
  }

  function textOf(content) {
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) {
      return content.map((p) => (p && p.type === 'text' ? p.text : '[' + ((p && p.type) || 'part') + ']')).join('\n');
    }
    return content == null ? '' : JSON.stringify(content);
  }

  // sseParser splits a text/event-stream into events (name, data) following
  // the SSE rules: lines end with CRLF, LF or CR; a blank line dispatches;
  // "data:" lines are joined with newlines; ":" lines are comments.
  function sseParser(onEvent) {
    let pending = '';
    let name = '';
    let data = [];
    function line(l) {
      if (l === '') {
        if (data.length) onEvent(name || 'message', data.join('\n'));
        name = '';
        data = [];
        return;
      }
      if (l[0] === ':') return;
      const i = l.indexOf(':');
      const field = i < 0 ? l : l.slice(0, i);
      let value = i < 0 ? '' : l.slice(i + 1);
      if (value[0] === ' ') value = value.slice(1);
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
    }
    return {
      push(chunk) {
        let text = pending + chunk;
        let hold = '';
        if (text.endsWith('\r')) { hold = '\r'; text = text.slice(0, -1); } // maybe the first half of CRLF
        const lines = text.split(/\r\n|\r|\n/);
        pending = lines.pop() + hold;
        lines.forEach(line);
      },
      end() {
        if (pending) line(pending.replace(/\r$/, ''));
        pending = '';
        line('');
      },
    };
  }

  // readStream renders a streaming answer into out and returns the reply text,
  // or null when the stream carried an error or ended early.
  async function readStream(res, out) {
    let text = '';
    let reasoning = null;
    let finished = false;
    let failed = false;
    const toolCalls = [];
    const parser = sseParser((name, data) => {
      if (name === 'gw.error') {
        failed = true;
        let env = null;
        try { env = JSON.parse(data); } catch (_) { env = { error: { code: 'gw.error', message: data } }; }
        addError(null, env, res.headers.get('x-request-id'));
        return;
      }
      if (data === '[DONE]') { finished = true; return; }
      let chunk;
      try { chunk = JSON.parse(data); } catch (_) { addNotice('unparsed_event', name + ': ' + data.slice(0, 200)); return; }
      if (name === 'gw.notice' || chunk.gw_notice) {
        const n = chunk.gw_notice || {};
        addNotice(n.code, n.message);
        return; // a notice chunk has no choices
      }
      if (chunk.error) { failed = true; addError(null, chunk, res.headers.get('x-request-id')); return; }
      for (const choice of chunk.choices || []) {
        const delta = choice.delta || {};
        if (typeof delta.content === 'string') { text += delta.content; out.body.textContent = text; }
        const thought = delta.reasoning_content || delta.reasoning;
        if (typeof thought === 'string' && thought) {
          if (!reasoning) { reasoning = el('div', 'reasoning'); out.box.insertBefore(reasoning, out.body); }
          reasoning.textContent += thought;
        }
        for (const tc of delta.tool_calls || []) {
          const i = tc.index || 0;
          toolCalls[i] = toolCalls[i] || { name: '', arguments: '' };
          if (tc.function && tc.function.name) toolCalls[i].name += tc.function.name;
          if (tc.function && tc.function.arguments) toolCalls[i].arguments += tc.function.arguments;
        }
      }
      scrollDown();
    });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.end();
    for (const tc of toolCalls) if (tc) out.box.append(el('div', 'muted', 'tool call ' + tc.name + '(' + tc.arguments + ')'));
    if (failed) return null;
    if (!finished) { addNotice('stream_incomplete', 'The stream ended without data: [DONE].'); return null; }
    return text;
  }

  function readUnary(body, out) {
    const choice = (body.choices && body.choices[0]) || {};
    const msg = choice.message || {};
    const text = textOf(msg.content);
    out.body.textContent = text;
    for (const tc of msg.tool_calls || []) {
      out.box.append(el('div', 'muted', 'tool call ' + ((tc.function && tc.function.name) || '?') + '(' + ((tc.function && tc.function.arguments) || '') + ')'));
    }
    if (body.gw_notice) addNotice(body.gw_notice.code, body.gw_notice.message);
    return text;
  }

  function showHeaderNotices(res) {
    const v = res.headers.get('gw-notice');
    if (v) for (const code of v.split(',')) addNotice(code.trim(), '');
  }

  async function send(message) {
    const mode = $('endpoint').value;
    const stream = $('stream').checked;
    const model = $('model').value;
    const system = $('system').value.trim();
    let url;
    let body;
    const h = headers(true);
    if (mode === 'v1') {
      if (!model) { addError(null, { error: { code: 'missing_field', message: 'Pick a model (Load models) first.', param: 'model' } }); return; }
      const messages = [];
      if (system) messages.push({ role: 'system', content: system });
      messages.push(...history, { role: 'user', content: message });
      url = api('v1/chat/completions');
      body = { model, messages, stream };
    } else {
      url = api('c1/chat');
      body = { message, stream };
      const conv = $('conv').value.trim();
      if (conv) body.conversation_id = conv;
      if (model) body.model = model;
      if (system) body.system_prompt = system;
    }
    addMessage('user', message);
    const out = addMessage('assistant', '');
    controller = new AbortController();
    $('send').disabled = true;
    $('stop').disabled = false;
    try {
      const res = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify(body), signal: controller.signal });
      setMeta(res);
      const conv = res.headers.get('gw-conversation-id') || res.headers.get('x-conversation-id');
      if (mode === 'c1' && conv) $('conv').value = conv;
      if (!res.ok) {
        out.box.remove();
        addError(res.status, await readError(res), res.headers.get('x-request-id'));
        return;
      }
      showHeaderNotices(res);
      const isSSE = (res.headers.get('content-type') || '').includes('text/event-stream');
      const reply = isSSE ? await readStream(res, out) : readUnary(await res.json(), out);
      if (reply !== null && mode === 'v1') history.push({ role: 'user', content: message }, { role: 'assistant', content: reply });
    } catch (err) {
      if (err.name === 'AbortError') addNotice('stopped', 'The request was cancelled.');
      else addError(null, { error: { code: 'client_error', message: err.message } });
    } finally {
      controller = null;
      $('send').disabled = false;
      $('stop').disabled = true;
    }
  }

  async function loadModels() {
    const sel = $('model');
    const wanted = sel.value || store.getItem(KEY_MODEL) || '';
    try {
      const res = await fetch(api('v1/models'), { headers: headers(false) });
      setMeta(res);
      if (!res.ok) { addError(res.status, await readError(res), res.headers.get('x-request-id')); return; }
      const list = await res.json();
      const ids = (list.data || []).map((m) => m.id).filter(Boolean);
      sel.replaceChildren();
      const dflt = el('option', null, '(tenant default, /c1 only)');
      dflt.value = '';
      sel.append(dflt);
      for (const id of ids) {
        const o = el('option', null, id);
        o.value = id;
        sel.append(o);
      }
      sel.value = ids.includes(wanted) ? wanted : (ids[0] || '');
    } catch (err) {
      addError(null, { error: { code: 'client_error', message: err.message } });
    }
  }

  async function loadHistory() {
    const id = $('conv').value.trim();
    if (!id) { addNotice('no_conversation', 'Enter a conversation id first.'); return; }
    try {
      const res = await fetch(api('c1/conversations/' + encodeURIComponent(id)), { headers: headers(false) });
      setMeta(res);
      if (!res.ok) { addError(res.status, await readError(res), res.headers.get('x-request-id')); return; }
      const conv = await res.json();
      $('transcript').replaceChildren();
      for (const m of conv.messages || []) addMessage(m.role, textOf(m.content));
    } catch (err) {
      addError(null, { error: { code: 'client_error', message: err.message } });
    }
  }

  function clear() {
    history = [];
    $('transcript').replaceChildren();
    $('meta').textContent = '';
  }

  function syncMode() {
    $('c1-row').hidden = $('endpoint').value !== 'c1';
  }

  $('token').value = store.getItem(KEY_TOKEN) || '';
  $('user').value = store.getItem(KEY_USER) || '';
  $('token').addEventListener('change', () => {
    const v = $('token').value.trim();
    if (v) store.setItem(KEY_TOKEN, v); else store.removeItem(KEY_TOKEN);
    if (v) loadModels();
  });
  $('user').addEventListener('change', () => {
    const v = $('user').value.trim();
    if (v) store.setItem(KEY_USER, v); else store.removeItem(KEY_USER);
  });
  $('model').addEventListener('change', () => store.setItem(KEY_MODEL, $('model').value));
  $('forget').addEventListener('click', () => {
    store.removeItem(KEY_TOKEN);
    $('token').value = '';
  });
  $('endpoint').addEventListener('change', () => { syncMode(); clear(); });
  $('load-models').addEventListener('click', loadModels);
  $('new-conv').addEventListener('click', () => { $('conv').value = ''; clear(); });
  $('load-history').addEventListener('click', loadHistory);
  $('clear').addEventListener('click', clear);
  $('stop').addEventListener('click', () => { if (controller) controller.abort(); });
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('input').value;
    if (!text.trim() || controller) return;
    $('input').value = '';
    send(text);
  });
  $('input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      $('composer').requestSubmit();
    }
  });
  syncMode();
  if ($('token').value) loadModels();
})();
