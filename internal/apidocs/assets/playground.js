'use strict';
// The chatgw playground: a chat client for POST /c1/chat and the stored
// conversations of /c1/conversations.
//
// Rules this script keeps (internal/apidocs/pages_test.go checks them):
//   - every URL is built by api(), relative to the page's directory, so the
//     page works when the gateway is mounted under a path prefix;
//   - model output, stored messages and error texts only ever become text
//     nodes (textContent, append of strings): the markdown renderer builds
//     elements itself and never parses HTML, so a reply cannot inject markup;
//   - the token and user id are kept in this browser's localStorage, so that a
//     reload or a new tab keeps working; "Forget token" removes it.
(function () {
  const root = new URL(location.pathname.replace(/\/playground\/?$/, '/'), location.href);
  const api = (path) => new URL(path, root);
  const $ = (id) => document.getElementById(id);
  const store = window.localStorage;
  const KEY_TOKEN = 'chatgw.playground.token';
  const KEY_USER = 'chatgw.playground.user';
  const KEY_MODEL = 'chatgw.playground.model';
  const KEY_TITLES = 'chatgw.playground.titles';
  const DEFAULT_USER = 'playground';
  // The image types /c1 accepts as data URIs (spec: ImageRef).
  const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
  // Big enough for photos, far below the 32 MB body limit once base64-encoded.
  const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

  const state = {
    conv: '', // the open conversation's id; '' until the gateway names one
    controller: null, // the AbortController of the request in flight
    attachments: [], // {url, name} data URIs for the next message
    models: new Map(), // alias -> ModelInfo of the chat models
    last: null, // {url, headers, body} of the last chat request, for curl
    temperatureSet: false,
  };

  // ---- small DOM helpers ----------------------------------------------------

  function el(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids.flat()) {
      if (k === undefined || k === null || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }

  function scrollDown() {
    const t = $('transcript');
    t.scrollTop = t.scrollHeight;
  }

  function transcriptAppend(node) {
    $('welcome').hidden = true;
    $('transcript').append(node);
    scrollDown();
    return node;
  }

  function setStatus(text) { $('status').textContent = text || ''; }

  // ---- markdown, rendered as DOM nodes ---------------------------------------

  // renderMarkdown turns the common markdown of model answers (fenced code,
  // headings, lists, quotes, rules, paragraphs and inline code, bold, italics,
  // strike-through and http(s) links) into a fragment. It builds every element
  // itself and puts all text in text nodes, so whatever the text holds, no
  // markup of its own reaches the page. An unclosed fence (a stream half-way)
  // renders as code up to the end.
  function renderMarkdown(text) {
    const frag = document.createDocumentFragment();
    const lines = String(text).split(/\r\n|\r|\n/);
    let para = [];
    const flush = () => {
      if (!para.length) return;
      const p = el('p');
      para.forEach((l, i) => {
        if (i) p.append(el('br'));
        inline(l, p);
      });
      frag.append(p);
      para = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      let m;
      if ((m = /^\s*(\x60{3,}|~{3,})\s*([\w+#.-]*)/.exec(line))) {
        flush();
        const fence = m[1];
        const body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
        const pre = el('pre');
        if (m[2]) pre.append(el('span', 'lang', m[2]));
        pre.append(el('code', null, body.join('\n')));
        frag.append(pre);
      } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        flush();
        const h = el('h' + Math.min(6, m[1].length + 2));
        inline(m[2].replace(/\s#+\s*$/, ''), h);
        frag.append(h);
      } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        flush();
        frag.append(el('hr'));
      } else if (/^\s*>/.test(line)) {
        flush();
        const quoted = [];
        for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*>\s?/, ''));
        i--;
        frag.append(el('blockquote', null, renderMarkdown(quoted.join('\n'))));
      } else if ((m = /^\s*([-*+]|\d{1,9}[.)])\s+/.exec(line))) {
        flush();
        const ordered = /\d/.test(m[1]);
        const list = el(ordered ? 'ol' : 'ul');
        if (ordered && parseInt(m[1], 10) !== 1) list.start = parseInt(m[1], 10);
        const item = ordered ? /^\s*\d{1,9}[.)]\s+(.*)$/ : /^\s*[-*+]\s+(.*)$/;
        for (; i < lines.length; i++) {
          const im = item.exec(lines[i]);
          if (im) {
            list.append(inline(im[1], el('li')));
          } else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
            list.lastChild.append(el('br'));
            inline(lines[i].trim(), list.lastChild);
          } else {
            break;
          }
        }
        i--;
        frag.append(list);
      } else if (!line.trim()) {
        flush();
      } else {
        para.push(line);
      }
    }
    flush();
    return frag;
  }

  // The inline spans, tried left to right: code, bold, strike-through,
  // italics, links. A backtick is written \x60 in these patterns.
  const INLINE = /(\x60+)([\s\S]*?)\1|\*\*(.+?)\*\*|__(.+?)__|~~(.+?)~~|\*(\S(?:.*?\S)?)\*|(?<![\w])_(\S(?:.*?\S)?)_(?![\w])|\[([^\]\n]+)\]\(([^()\s]+)\)/g;

  // inline appends the inline markdown of text to parent and returns parent.
  function inline(text, parent) {
    let at = 0;
    INLINE.lastIndex = 0;
    const found = [];
    let m;
    while ((m = INLINE.exec(text))) found.push(m);
    for (const f of found) {
      if (f.index > at) parent.append(text.slice(at, f.index));
      at = f.index + f[0].length;
      if (f[1]) parent.append(el('code', null, f[2]));
      else if (f[3] !== undefined || f[4] !== undefined) parent.append(inline(f[3] !== undefined ? f[3] : f[4], el('strong')));
      else if (f[5] !== undefined) parent.append(inline(f[5], el('del')));
      else if (f[6] !== undefined || f[7] !== undefined) parent.append(inline(f[6] !== undefined ? f[6] : f[7], el('em')));
      else parent.append(link(f[8], f[9]));
    }
    if (at < text.length) parent.append(text.slice(at));
    return parent;
  }

  // link makes an anchor for http(s) targets only; any other scheme (a
  // script URL among them) stays visible as plain text.
  function link(label, target) {
    if (!/^https?:/i.test(target)) return label + ' (' + target + ')';
    const a = el('a', null, label);
    a.href = target;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    return a;
  }

  // ---- messages and cards -----------------------------------------------------

  // thumbs shows images: data URIs only, so nothing is fetched from elsewhere.
  function thumbs(urls) {
    const box = el('div', 'thumbs');
    for (const u of urls) {
      if (typeof u !== 'string' || !/^data:image\//.test(u)) {
        box.append(el('span', 'muted small', '[image]'));
        continue;
      }
      const img = el('img');
      img.alt = 'attached image';
      img.src = u;
      box.append(img);
    }
    return box;
  }

  // partsOf splits stored or sent content into its text and its image URLs.
  function partsOf(content) {
    if (typeof content === 'string') return { text: content, images: [] };
    const out = { text: '', images: [] };
    for (const p of Array.isArray(content) ? content : []) {
      if (p && p.type === 'text') out.text += (out.text ? '\n' : '') + p.text;
      else if (p && p.type === 'image_url') out.images.push(p.image_url && p.image_url.url);
      else out.text += (out.text ? '\n' : '') + '[' + ((p && p.type) || 'part') + ']';
    }
    return out;
  }

  function addMessage(role, content) {
    const { text, images } = partsOf(content);
    const body = el('div', 'body');
    if (role === 'assistant') body.append(renderMarkdown(text));
    else body.textContent = text;
    const box = el('div', 'msg ' + role, el('div', 'who', role), body);
    if (images.length) box.append(thumbs(images));
    transcriptAppend(box);
    return { box, body };
  }

  function addNotice(code, message) {
    return transcriptAppend(el('div', 'card notice',
      el('span', 'title', 'notice '), el('code', null, code || '?'), message ? ': ' + message : ''));
  }

  function docLink(code) {
    const a = el('a', null, 'docs/errors#' + code);
    a.href = api('docs/errors#' + encodeURIComponent(code)).href;
    a.target = '_blank';
    a.rel = 'noopener';
    return a;
  }

  // addError shows an error envelope as a card: status, code, message, param,
  // a link to the code's documentation and the request id to quote.
  function addError(status, envelope, requestId) {
    const e = (envelope && envelope.error) || {};
    const card = el('div', 'card error',
      el('div', 'title', status ? 'Error ' + status : 'Error'),
      el('div', null, el('code', null, e.code || 'unknown'), ': ', e.message || ''),
      e.param ? el('div', null, 'param: ', el('code', null, e.param)) : null,
      envelope && envelope.available_fallbacks ? el('div', null, 'available fallbacks: ' + envelope.available_fallbacks.join(', ')) : null,
      status === 401 ? el('div', null, 'Check the bearer token in the settings (\u2699).') : null,
      e.code ? el('div', 'small', 'See ', docLink(e.code)) : null,
      requestId ? el('div', 'small muted', 'x-request-id: ' + requestId) : null);
    if (status === 401) showSettings(true);
    return transcriptAppend(card);
  }

  // ---- requests ----------------------------------------------------------------

  function token() { return $('token').value.trim(); }
  function user() { return $('user').value.trim() || DEFAULT_USER; }

  function headers(json) {
    const h = { 'GW-User-Id': user() };
    if (token()) h['Authorization'] = 'Bearer ' + token();
    if (json) h['Content-Type'] = 'application/json';
    return h;
  }

  // call fetches path (relative to the page) with the credentials.
  function call(path, opts) {
    const o = Object.assign({ headers: headers(opts && opts.body !== undefined) }, opts || {});
    return fetch(api(path), o);
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

  async function failed(res) {
    addError(res.status, await readError(res), res.headers.get('x-request-id'));
  }

  function clientError(err) {
    addError(null, { error: { code: 'client_error', message: err.message } });
  }

  // ---- models --------------------------------------------------------------------

  // isChat: a model that reads and writes text (GET /v1/info says so with
  // kind when it has one, and always with its modalities).
  function isChat(m) {
    if (m.kind) return m.kind === 'chat';
    const mod = m.modalities || {};
    return !!(mod.text_in && mod.text_out);
  }

  // unconfigured: a model none of whose backends has an address (GET
  // /v1/info says so with the model's status; older gateways only with
  // the backends' statuses).
  function unconfigured(m) {
    if (m.status) return m.status === 'unconfigured';
    const bs = m.backends || [];
    return bs.length > 0 && bs.every((b) => b.status === 'unconfigured');
  }

  async function loadModels() {
    const sel = $('model');
    const wanted = sel.value || store.getItem(KEY_MODEL) || '';
    try {
      const res = await call('v1/info');
      if (!res.ok) { await failed(res); return false; }
      const info = await res.json();
      state.models.clear();
      const opts = [el('option', null, 'default model')];
      opts[0].value = '';
      for (const m of info.models || []) {
        if (!isChat(m)) continue;
        state.models.set(m.alias, m);
        const off = unconfigured(m);
        const o = el('option', null, m.alias + (off ? ' \u2014 no backend configured' : ''));
        o.value = m.alias;
        o.title = m.description || '';
        if (off) o.className = 'unconfigured';
        opts.push(o);
      }
      sel.replaceChildren(...opts);
      sel.value = state.models.has(wanted) ? wanted : '';
      return true;
    } catch (err) {
      clientError(err);
      return false;
    }
  }

  // ---- conversations -----------------------------------------------------------

  // Titles are the first user message of a conversation, remembered by this
  // browser (the gateway's summaries carry no title).
  function titles() {
    try { return JSON.parse(store.getItem(KEY_TITLES) || '{}') || {}; } catch (_) { return {}; }
  }

  function rememberTitle(id, text) {
    const t = titles();
    if (t[id] || !text) return;
    t[id] = text.replace(/\s+/g, ' ').trim().slice(0, 80);
    const ids = Object.keys(t);
    if (ids.length > 300) delete t[ids[0]]; // keep the storage small
    store.setItem(KEY_TITLES, JSON.stringify(t));
  }

  function forgetTitle(id) {
    const t = titles();
    delete t[id];
    store.setItem(KEY_TITLES, JSON.stringify(t));
  }

  function when(ts) {
    if (!ts) return '';
    const d = new Date(ts);
    return isNaN(d) ? '' : d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
  }

  async function loadConversations() {
    if (!token()) return;
    let list;
    try {
      const res = await call('c1/conversations?limit=100');
      if (!res.ok) return; // loadModels shows the error of a bad token once
      list = (await res.json()).data || [];
    } catch (_) {
      return;
    }
    // The gateway sends newest first already; sort again so the order never
    // depends on it.
    list.sort((a, b) => String(b.last_updated || '').localeCompare(String(a.last_updated || '')));
    const t = titles();
    const items = list.map((c) => {
      const id = c.conversation_id;
      const open = el('button', 'conv-open',
        el('span', 'conv-title', t[id] || 'Conversation ' + id.slice(0, 8)),
        el('span', 'conv-meta', c.message_count + ' messages' + (c.last_updated ? ' \u00b7 ' + when(c.last_updated) : '')));
      open.type = 'button';
      open.addEventListener('click', () => openConversation(id));
      const del = el('button', 'conv-delete', '\u2715');
      del.type = 'button';
      del.title = 'Delete this conversation';
      del.setAttribute('aria-label', 'Delete conversation ' + (t[id] || id));
      del.addEventListener('click', () => deleteConversation(id));
      const li = el('li', id === state.conv ? 'current' : null, open, del);
      li.dataset.id = id;
      return li;
    });
    $('conversations').replaceChildren(...items);
    $('conv-empty').hidden = items.length > 0;
  }

  function markCurrent() {
    for (const li of $('conversations').children) li.classList.toggle('current', li.dataset.id === state.conv);
  }

  function clearTranscript() {
    $('transcript').replaceChildren($('welcome'));
    $('welcome').hidden = false;
  }

  function newChat() {
    if (state.controller) state.controller.abort();
    state.conv = '';
    clearTranscript();
    markCurrent();
    closeSidebar();
    $('input').focus();
  }

  async function openConversation(id) {
    if (state.controller) state.controller.abort();
    closeSidebar();
    try {
      const res = await call('c1/conversations/' + encodeURIComponent(id));
      if (!res.ok) { await failed(res); return; }
      const conv = await res.json();
      state.conv = id;
      clearTranscript();
      const msgs = conv.messages || [];
      const first = msgs.find((m) => m.role === 'user');
      if (first) rememberTitle(id, partsOf(first.content).text);
      for (const m of msgs) addMessage(m.role, m.content);
      markCurrent();
    } catch (err) {
      clientError(err);
    }
  }

  async function deleteConversation(id) {
    const t = titles()[id] || id;
    if (!window.confirm('Delete the conversation \u201c' + t + '\u201d? This cannot be undone.')) return;
    try {
      const res = await call('c1/conversations/' + encodeURIComponent(id), { method: 'DELETE' });
      if (!res.ok) { await failed(res); return; }
      forgetTitle(id);
      if (id === state.conv) newChat();
      await loadConversations();
    } catch (err) {
      clientError(err);
    }
  }

  // ---- streaming -----------------------------------------------------------------

  // sseParser splits a text/event-stream into events (name, data) following
  // the SSE rules: lines end with CRLF, LF or CR; a blank line dispatches;
  // "data:" lines are joined with newlines; ":" lines are comments.
  function sseParser(emit) {
    let pending = '';
    let name = '';
    let data = [];
    function line(l) {
      if (l === '') {
        if (data.length) emit(name || 'message', data.join('\n'));
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

  // answerView renders an answer's text as markdown at most once a frame, so
  // that a fast stream does not re-render for every token.
  function answerView(out) {
    let text = '';
    let queued = false;
    const draw = () => { queued = false; out.body.replaceChildren(renderMarkdown(text)); scrollDown(); };
    return {
      set(t) {
        text = t;
        if (!queued) { queued = true; requestAnimationFrame(draw); }
      },
      flush() { draw(); },
    };
  }

  // readStream renders a streaming answer into out and returns what it saw:
  // the text, the usage, the model that answered, whether [DONE] came and
  // whether a gw.error did.
  async function readStream(res, out, firstToken) {
    const seen = { text: '', usage: null, model: '', done: false, error: false };
    const view = answerView(out);
    let reasoning = null;
    const parser = sseParser((name, data) => {
      if (name === 'gw.error') {
        seen.error = true;
        let env = null;
        try { env = JSON.parse(data); } catch (_) { env = { error: { code: 'gw.error', message: data } }; }
        addError(null, env, res.headers.get('x-request-id'));
        return;
      }
      if (data === '[DONE]') { seen.done = true; return; }
      let chunk;
      try { chunk = JSON.parse(data); } catch (_) { addNotice('unparsed_event', name + ': ' + data.slice(0, 200)); return; }
      if (name === 'gw.notice' || chunk.gw_notice) {
        const n = chunk.gw_notice || {};
        addNotice(n.code, n.message);
        return; // a notice chunk has no choices
      }
      if (chunk.error) { seen.error = true; addError(null, chunk, res.headers.get('x-request-id')); return; }
      if (chunk.model) seen.model = chunk.model;
      if (chunk.usage) seen.usage = chunk.usage;
      for (const choice of chunk.choices || []) {
        const delta = choice.delta || {};
        const thought = delta.reasoning_content || delta.reasoning;
        if (typeof thought === 'string' && thought) {
          firstToken();
          if (!reasoning) { reasoning = el('div', 'reasoning'); out.box.insertBefore(reasoning, out.body); }
          reasoning.textContent += thought;
        }
        if (typeof delta.content === 'string' && delta.content) {
          firstToken();
          seen.text += delta.content;
          view.set(seen.text);
        }
      }
    });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
      }
      parser.push(decoder.decode());
      parser.end();
    } finally {
      view.flush(); // what arrived stays visible when the reader is stopped
    }
    return seen;
  }

  function readUnary(res, body, out) {
    const choice = (body.choices && body.choices[0]) || {};
    const msg = choice.message || {};
    const text = partsOf(msg.content).text;
    out.body.replaceChildren(renderMarkdown(text));
    const v = res.headers.get('gw-notice');
    if (v) for (const code of v.split(',')) addNotice(code.trim(), '');
    return { text, usage: body.usage || null, model: body.model || '', done: true, error: false };
  }

  function ms(n) { return n < 1000 ? Math.round(n) + ' ms' : (n / 1000).toFixed(2) + ' s'; }

  // stats is the line under an answer: who served it, the tokens it took and
  // how long it took.
  function stats(seen, alias, ttft, total) {
    const parts = [];
    if (seen.backend) parts.push('served by ' + seen.backend + (seen.backendModel ? ' (' + seen.backendModel + ')' : ''));
    else if (seen.model) parts.push('served as ' + seen.model);
    if (alias) parts.push(alias);
    const u = seen.usage;
    if (u) parts.push((u.prompt_tokens || 0) + ' \u2192 ' + (u.completion_tokens || 0) + ' tokens');
    if (ttft !== null) parts.push('first token ' + ms(ttft));
    parts.push('total ' + ms(total));
    return el('div', 'stats', parts.join(' \u00b7 '));
  }

  // ---- sending ---------------------------------------------------------------------

  function buildBody(text, images) {
    const body = { message: text, stream: true };
    if (state.conv) body.conversation_id = state.conv;
    const model = $('model').value;
    if (model) body.model = model;
    if (state.temperatureSet) body.temperature = Number($('temperature').value);
    const max = parseInt($('max-tokens').value, 10);
    if (max > 0) body.max_tokens = max;
    const system = $('system').value.trim();
    if (system && !state.conv) body.system_prompt = system;
    if (images.length) body.images = images.map((a) => ({ url: a.url }));
    return body;
  }

  function busy(on) {
    $('send').hidden = on;
    $('stop').hidden = !on;
    $('attach').disabled = on;
  }

  async function send(text) {
    if (!token()) {
      addError(401, { error: { code: 'missing_authorization', message: 'Paste a bearer token in the settings first.' } });
      return;
    }
    const images = state.attachments.splice(0);
    renderAttachments();
    const body = buildBody(text, images);
    const h = headers(true);
    state.last = { url: api('c1/chat').href, headers: h, body };
    $('copy-curl').disabled = false;
    const shown = images.length ? [{ type: 'text', text }].concat(images.map((a) => ({ type: 'image_url', image_url: { url: a.url } }))) : text;
    addMessage('user', shown);
    const out = addMessage('assistant', '');
    out.box.classList.add('pending');
    const controller = new AbortController();
    state.controller = controller;
    busy(true);
    setStatus('Waiting for the first token\u2026');
    const t0 = performance.now();
    let ttft = null;
    const firstToken = () => {
      if (ttft === null) { ttft = performance.now() - t0; setStatus('Streaming\u2026'); }
    };
    let seen = null;
    try {
      const res = await fetch(api('c1/chat'), { method: 'POST', headers: h, body: JSON.stringify(body), signal: controller.signal });
      const conv = res.headers.get('gw-conversation-id') || res.headers.get('x-conversation-id');
      if (conv && !state.conv) { state.conv = conv; rememberTitle(conv, text); }
      if (!res.ok) {
        out.box.remove();
        await failed(res);
        return;
      }
      const sse = (res.headers.get('content-type') || '').includes('text/event-stream');
      seen = sse ? await readStream(res, out, firstToken) : readUnary(res, await res.json(), out);
      // The answer's model is the alias asked for; these headers name the backend that served.
      seen.backend = res.headers.get('gw-backend') || '';
      seen.backendModel = res.headers.get('gw-backend-model') || '';
      if (!seen.done && !seen.error) addNotice('stream_incomplete', 'The stream ended without data: [DONE].');
    } catch (err) {
      if (err.name === 'AbortError') addNotice('stopped', 'You stopped this answer; what arrived is kept on the page.');
      else clientError(err);
    } finally {
      out.box.classList.remove('pending');
      if (seen) out.box.append(stats(seen, body.model || '', ttft, performance.now() - t0));
      if (state.controller === controller) {
        state.controller = null;
        busy(false);
      }
      setStatus('');
      loadConversations();
    }
  }

  // ---- copy as curl ------------------------------------------------------------------

  // sh quotes a word for a POSIX shell.
  function sh(s) { return "'" + String(s).split("'").join("'\\''") + "'"; }

  // curlOf is the last request as a command line; the token is left to the
  // shell as $TOKEN so that the command can be shared.
  function curlOf(last) {
    const lines = ['curl -N ' + sh(last.url)];
    for (const [k, v] of Object.entries(last.headers)) {
      lines.push(k === 'Authorization' ? '-H "Authorization: Bearer $TOKEN"' : '-H ' + sh(k + ': ' + v));
    }
    lines.push('-d ' + sh(JSON.stringify(last.body)));
    return lines.join(' \\\n  ');
  }

  async function copyCurl() {
    if (!state.last) return;
    const text = curlOf(state.last);
    $('curl-text').value = text;
    $('curl-copied').textContent = '';
    $('curl-dialog').showModal();
    $('curl-text').select();
    try {
      await navigator.clipboard.writeText(text);
      $('curl-copied').textContent = 'Copied to the clipboard.';
    } catch (_) {
      $('curl-copied').textContent = 'Select and copy it by hand.';
    }
  }

  // ---- attachments -------------------------------------------------------------------

  function renderAttachments() {
    const box = $('attachments');
    box.replaceChildren(...state.attachments.map((a, i) => {
      const img = el('img');
      img.alt = a.name;
      img.src = a.url;
      const rm = el('button', null, '\u2715');
      rm.type = 'button';
      rm.setAttribute('aria-label', 'Remove ' + a.name);
      rm.addEventListener('click', () => { state.attachments.splice(i, 1); renderAttachments(); });
      return el('div', 'attachment', img, rm);
    }));
    box.hidden = state.attachments.length === 0;
  }

  function attach(files) {
    for (const f of files) {
      if (!IMAGE_TYPES.includes(f.type)) { addNotice('unsupported_image', f.name + ': only PNG, JPEG, WebP and GIF images can be sent.'); continue; }
      if (f.size > MAX_IMAGE_BYTES) { addNotice('image_too_large', f.name + ' is over 8 MB.'); continue; }
      const r = new FileReader();
      r.addEventListener('load', () => {
        state.attachments.push({ url: String(r.result), name: f.name || 'pasted image' });
        renderAttachments();
      });
      r.readAsDataURL(f);
    }
  }

  // ---- layout ----------------------------------------------------------------------------

  function showSettings(open) {
    $('settings').hidden = !open;
    $('toggle-settings').setAttribute('aria-expanded', String(open));
  }

  function closeSidebar() { $('sidebar').classList.remove('open'); }

  function autosize() {
    const t = $('input');
    t.style.height = 'auto';
    t.style.height = Math.min(t.scrollHeight + 2, 192) + 'px';
  }

  function showTemperature() {
    $('temperature-value').textContent = state.temperatureSet ? $('temperature').value : 'default';
  }

  // ---- wiring ------------------------------------------------------------------------------

  // applyToken stores the token and checks it at once, so that a wrong one
  // shows its 401 before anything is sent.
  async function applyToken() {
    const v = token();
    if (v) store.setItem(KEY_TOKEN, v); else store.removeItem(KEY_TOKEN);
    if (!v) return;
    if (await loadModels()) {
      showSettings(false);
      loadConversations();
    } else {
      $('conversations').replaceChildren();
      $('conv-empty').hidden = false;
    }
  }

  $('token').value = store.getItem(KEY_TOKEN) || '';
  $('user').value = store.getItem(KEY_USER) || DEFAULT_USER;
  $('token').addEventListener('change', applyToken);
  $('token').addEventListener('paste', () => setTimeout(applyToken, 0));
  $('user').addEventListener('change', () => {
    store.setItem(KEY_USER, user());
    newChat();
    loadConversations();
  });
  $('model').addEventListener('change', () => store.setItem(KEY_MODEL, $('model').value));
  $('temperature').addEventListener('input', () => { state.temperatureSet = true; showTemperature(); });
  $('reset-temperature').addEventListener('click', () => { state.temperatureSet = false; $('temperature').value = '1'; showTemperature(); });
  $('forget').addEventListener('click', () => {
    store.removeItem(KEY_TOKEN);
    $('token').value = '';
    $('conversations').replaceChildren();
    $('conv-empty').hidden = false;
  });
  $('toggle-settings').addEventListener('click', () => showSettings($('settings').hidden));
  $('open-side').addEventListener('click', () => $('sidebar').classList.add('open'));
  $('close-side').addEventListener('click', closeSidebar);
  $('new-chat').addEventListener('click', newChat);
  $('stop').addEventListener('click', () => { if (state.controller) state.controller.abort(); });
  $('copy-curl').addEventListener('click', copyCurl);
  $('curl-close').addEventListener('click', () => $('curl-dialog').close());
  $('attach').addEventListener('click', () => $('file').click());
  $('file').addEventListener('change', () => { attach($('file').files); $('file').value = ''; });
  $('input').addEventListener('paste', (ev) => {
    const files = ev.clipboardData ? Array.from(ev.clipboardData.files) : [];
    if (files.length) { ev.preventDefault(); attach(files); }
  });
  const main = $('main');
  main.addEventListener('dragover', (ev) => { ev.preventDefault(); $('composer').classList.add('dragging'); });
  main.addEventListener('dragleave', () => $('composer').classList.remove('dragging'));
  main.addEventListener('drop', (ev) => {
    ev.preventDefault();
    $('composer').classList.remove('dragging');
    if (ev.dataTransfer) attach(ev.dataTransfer.files);
  });
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('input').value;
    if ((!text.trim() && !state.attachments.length) || state.controller) return;
    $('input').value = '';
    autosize();
    send(text);
  });
  $('input').addEventListener('input', autosize);
  $('input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $('composer').requestSubmit();
    }
  });
  showTemperature();
  if (token()) applyToken(); else showSettings(true);
})();
