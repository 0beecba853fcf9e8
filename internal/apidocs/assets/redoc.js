'use strict';
// Renders openapi.json (fetched relative to this page, so the page works under a
// path prefix) as an API reference: operations grouped by tag, each with an
// anchor (#<operationId>), its parameters, request body and responses, then the
// component schemas (#schema/<Name>). Every text of the document is inserted
// as a text node, never parsed as HTML, so it cannot inject markup.
(function () {
  const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
  const base = new URL(location.pathname.replace(/\/redoc\/?$/, '/'), location.href);
  let doc = null;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids.flat(Infinity)) {
      if (k === undefined || k === null || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }

  // md renders the markdown subset of the document's texts: paragraphs,
  // `code` spans and **bold**. Everything else stays literal text.
  function md(text) {
    const out = document.createDocumentFragment();
    if (!text) return out;
    for (const para of String(text).split(/\n\s*\n/)) {
      const p = el('p');
      for (const tok of para.split(/(\x60[^\x60]+\x60|\*\*[^*]+\*\*)/)) {
        if (!tok) continue;
        if (tok.length > 2 && tok[0] === '\x60' && tok[tok.length - 1] === '\x60') p.append(el('code', null, tok.slice(1, -1)));
        else if (tok.length > 4 && tok.startsWith('**') && tok.endsWith('**')) p.append(el('strong', null, tok.slice(2, -2)));
        else p.append(tok);
      }
      out.append(p);
    }
    return out;
  }

  function slug(s) { return String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, ''); }

  // resolve follows a local $ref ("#/components/...") of the document.
  function resolve(obj) {
    let seen = 0;
    while (obj && obj.$ref && seen++ < 10) {
      const parts = obj.$ref.replace(/^#\//, '').split(/\//);
      let cur = doc;
      for (const p of parts) cur = cur ? cur[p.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
      obj = cur;
    }
    return obj || {};
  }

  function refName(ref) { return ref.replace(/^.*\//, ''); }

  function typeLabel(s) {
    if (!s) return 'any';
    if (s.$ref) return refName(s.$ref);
    if ('const' in s) return JSON.stringify(s.const);
    const alts = s.oneOf || s.anyOf;
    if (alts) return alts.map(typeLabel).join(' | ');
    let t = s.type;
    if (Array.isArray(t)) t = t.join(' | ');
    if (t === 'array' || (Array.isArray(s.type) && s.type.includes('array'))) t = String(t).replace('array', 'array of ' + typeLabel(s.items));
    if (!t) t = s.properties ? 'object' : 'any';
    if (s.format) t += ' (' + s.format + ')';
    return t;
  }

  function constraints(s) {
    const out = [];
    if (!s || s.$ref) return out;
    if (s.enum) out.push('one of ' + s.enum.map((v) => JSON.stringify(v)).join(', '));
    if ('default' in s) out.push('default ' + JSON.stringify(s.default));
    if ('minimum' in s) out.push('min ' + s.minimum);
    if ('maximum' in s) out.push('max ' + s.maximum);
    if ('maxLength' in s) out.push('max length ' + s.maxLength);
    if ('maxItems' in s) out.push('max items ' + s.maxItems);
    if (s.additionalProperties === false) out.push('no other fields');
    return out.map((c) => el('span', { class: 'pill' }, c));
  }

  // schemaNode renders a schema as a nested list. A $ref renders as a link to
  // the component plus a lazily expanded <details>, so cycles cost nothing.
  function schemaNode(s, depth) {
    if (!s) return null;
    if (s.$ref) {
      const name = refName(s.$ref);
      const d = el('details', null, el('summary', null, el('a', { href: '#schema/' + name }, name)));
      d.addEventListener('toggle', () => {
        if (d.open && d.childNodes.length === 1) d.append(schemaBody(resolve(s), depth + 1));
      });
      return d;
    }
    return schemaBody(s, depth);
  }

  function schemaBody(s, depth) {
    const box = document.createDocumentFragment();
    if (depth > 12) return box;
    const alts = s.oneOf || s.anyOf;
    if (alts) {
      const ul = el('ul', { class: 'props' });
      alts.forEach((a, i) => ul.append(el('li', null, el('span', { class: 'muted' }, (s.oneOf ? 'one of' : 'any of') + ' #' + (i + 1) + ': '), el('code', null, typeLabel(a)), descOf(a), constraints(a), nested(a, depth))));
      box.append(ul);
    }
    if (s.properties) {
      const req = new Set(s.required || []);
      const ul = el('ul', { class: 'props' });
      for (const [name, p] of Object.entries(s.properties)) {
        ul.append(el('li', null,
          el('code', null, name), ' ', el('span', { class: 'muted' }, typeLabel(p)),
          req.has(name) ? el('span', { class: 'req' }, ' required') : null, ' ',
          constraints(p), descOf(p), nested(p, depth)));
      }
      box.append(ul);
    }
    if (s.items && (s.items.$ref || s.items.properties || s.items.oneOf)) {
      box.append(el('div', { class: 'muted' }, 'items:'), schemaNode(s.items, depth + 1));
    }
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      box.append(el('div', { class: 'muted' }, 'map values:'), schemaNode(s.additionalProperties, depth + 1));
    }
    return box;
  }

  function descOf(s) {
    if (!s || s.$ref || !s.description) return null;
    return el('div', { class: 'muted' }, md(s.description));
  }

  function nested(s, depth) {
    if (!s) return null;
    if (s.$ref) return schemaNode(s, depth + 1);
    if (s.properties || s.oneOf || s.anyOf) return schemaBody(s, depth + 1);
    if (s.items && (s.items.$ref || s.items.properties || s.items.oneOf)) return schemaNode(s.items, depth + 1);
    if (s.additionalProperties && typeof s.additionalProperties === 'object') return schemaNode(s.additionalProperties, depth + 1);
    return null;
  }

  function contentBlock(content) {
    const frag = document.createDocumentFragment();
    for (const [type, media] of Object.entries(content || {})) {
      frag.append(el('div', null, el('span', { class: 'pill mono' }, type), ' ', media.schema ? el('code', null, typeLabel(media.schema)) : null));
      if (media.schema) {
        frag.append(descOf(media.schema));
        frag.append(schemaNode(media.schema, 0));
      }
      const ex = media.example !== undefined ? media.example : null;
      if (ex !== null) {
        frag.append(el('details', null, el('summary', null, 'Example'), el('pre', null, typeof ex === 'string' ? ex : JSON.stringify(ex, null, 2))));
      }
    }
    return frag;
  }

  function parametersOf(pathItem, op) {
    const byKey = new Map();
    for (const p of [...(pathItem.parameters || []), ...(op.parameters || [])]) {
      const r = resolve(p);
      byKey.set(r.in + ':' + r.name, r);
    }
    return [...byKey.values()];
  }

  function paramTable(params) {
    const t = el('table', null, el('tr', null, el('th', null, 'Name'), el('th', null, 'In'), el('th', null, 'Type'), el('th', null, 'Description')));
    for (const p of params) {
      t.append(el('tr', null,
        el('td', null, el('code', null, p.name), p.required ? el('span', { class: 'req' }, ' required') : null),
        el('td', null, p.in),
        el('td', null, typeLabel(p.schema), ' ', constraints(p.schema)),
        el('td', null, md(p.description))));
    }
    return t;
  }

  function responsesBlock(responses) {
    const frag = document.createDocumentFragment();
    for (const [status, raw] of Object.entries(responses || {})) {
      const r = resolve(raw);
      const cls = 'status s' + String(status)[0];
      const d = el('details', { open: String(status).startsWith('2') ? '' : null },
        el('summary', null, el('span', { class: cls }, status), ' ', r.description ? String(r.description).split(/\n/)[0] : ''));
      if (r.headers && Object.keys(r.headers).length) {
        const ul = el('ul', { class: 'props' });
        for (const [name, h] of Object.entries(r.headers)) {
          const rh = resolve(h);
          ul.append(el('li', null, el('span', { class: 'muted' }, 'header '), el('code', null, name), ' ', el('span', { class: 'muted' }, typeLabel(rh.schema)), el('div', { class: 'muted' }, md(rh.description))));
        }
        d.append(ul);
      }
      d.append(contentBlock(r.content));
      frag.append(d);
    }
    return frag;
  }

  function authOf(op) {
    const sec = op.security !== undefined ? op.security : doc.security;
    if (!sec || sec.length === 0 || sec.every((s) => Object.keys(s).length === 0)) return el('span', { class: 'pill' }, 'public, no bearer');
    return [el('span', { class: 'pill' }, 'bearer'), op['x-gw-scope'] ? el('span', { class: 'pill' }, 'scope ', el('code', null, op['x-gw-scope'])) : null];
  }

  function opSection(path, method, pathItem, op) {
    const id = op.operationId || slug(method + ' ' + path);
    const s = el('section', { class: 'op', id: id },
      el('h3', null, el('span', { class: 'm m-' + method }, method), el('span', { class: 'mono' }, path), el('span', null, op.summary || ''),
        el('a', { class: 'anchor', href: '#' + id, title: 'Link to this operation' }, '#')),
      el('div', null, authOf(op)),
      md(op.description));
    const params = parametersOf(pathItem, op);
    if (params.length) s.append(el('h4', null, 'Parameters'), paramTable(params));
    if (op.requestBody) {
      const rb = resolve(op.requestBody);
      s.append(el('h4', null, 'Request body', rb.required ? el('span', { class: 'req' }, ' required') : null), md(rb.description), contentBlock(rb.content));
    }
    s.append(el('h4', null, 'Responses'), responsesBlock(op.responses));
    return s;
  }

  function render() {
    const main = document.getElementById('main');
    const nav = document.getElementById('nav');
    main.replaceChildren();
    nav.replaceChildren();
    const info = doc.info || {};
    main.append(el('h1', null, info.title || 'API', ' ', el('span', { class: 'pill' }, 'v' + (info.version || '?')), ' ', el('span', { class: 'pill' }, 'OpenAPI ' + doc.openapi)));
    if (info.summary) main.append(el('p', null, info.summary));
    main.append(md(info.description), el('p', { class: 'muted' }, 'Source: ', el('a', { href: new URL('openapi.json', base).href }, 'openapi.json')));

    const groups = new Map();
    for (const t of doc.tags || []) groups.set(t.name, { tag: t, ops: [] });
    for (const [path, item] of Object.entries(doc.paths || {})) {
      for (const m of METHODS) {
        const op = item[m];
        if (!op) continue;
        const tag = (op.tags && op.tags[0]) || 'Other';
        if (!groups.has(tag)) groups.set(tag, { tag: { name: tag }, ops: [] });
        groups.get(tag).ops.push([path, m, item, op]);
      }
    }
    for (const { tag, ops } of groups.values()) {
      if (!ops.length) continue;
      const tid = 'tag/' + slug(tag.name);
      const list = el('ul');
      nav.append(el('h2', null, el('a', { href: '#' + tid }, tag.name)), list);
      main.append(el('h2', { class: 'tag', id: tid }, tag.name), md(tag.description));
      for (const [path, m, item, op] of ops) {
        const sec = opSection(path, m, item, op);
        list.append(el('li', null, el('a', { href: '#' + sec.id, title: m.toUpperCase() + ' ' + path }, el('span', { class: 'm m-' + m }, m), ' ', path)));
        main.append(sec);
      }
    }

    const schemas = (doc.components && doc.components.schemas) || {};
    const slist = el('ul');
    nav.append(el('h2', null, el('a', { href: '#schemas' }, 'Schemas')), slist);
    main.append(el('h2', { class: 'tag', id: 'schemas' }, 'Schemas'));
    for (const [name, s] of Object.entries(schemas)) {
      slist.append(el('li', null, el('a', { href: '#schema/' + name }, name)));
      main.append(el('section', { class: 'op', id: 'schema/' + name },
        el('h3', null, el('span', { class: 'mono' }, name), el('span', { class: 'muted' }, typeLabel(s)), el('a', { class: 'anchor', href: '#schema/' + name }, '#')),
        md(s.description), constraints(s), schemaBody(s, 0)));
    }

    if (location.hash.length > 1) {
      const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView();
    }
  }

  fetch(new URL('openapi.json', base), { headers: { Accept: 'application/json' } })
    .then((r) => {
      if (!r.ok) throw new Error('openapi.json answered HTTP ' + r.status);
      return r.json();
    })
    .then((d) => { doc = d; render(); })
    .catch((err) => {
      const status = document.getElementById('status');
      status.className = 'error';
      status.textContent = 'Could not load the API description: ' + err.message;
    });
})();
