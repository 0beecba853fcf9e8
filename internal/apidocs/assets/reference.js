'use strict';
// Starts Swagger UI (swagger-ui-bundle.js, loaded before this file) on the
// document that the page's data-spec attribute names relative to the page, so
// the reference also works when the gateway is mounted under a path prefix.
// Deep links are Swagger UI's (#/<tag>/<operationId>); the links of the
// earlier reference (#<operationId>, #operation/<operationId>, #tag/<tag>)
// are taken to the same place.
(function () {
  const root = document.getElementById('swagger-ui');
  const spec = new URL(root.getAttribute('data-spec'), document.baseURI).href;
  let doc = null; // the document, once Swagger UI has loaded it

  // deepPath is Swagger UI's form of a tag or operationId in a deep link.
  function deepPath(s) {
    return String(s).trim().replace(/\s/g, '%20');
  }

  // legacyLink rewrites a link of the earlier reference to Swagger UI's form,
  // or returns '' when hash is not one (or names an operation before the
  // document is loaded). Swagger UI may have added a '/' after the '#'
  // already. A bare #<operationId> is one only when no tag has that name.
  function legacyLink(hash) {
    let m = /^#\/?tag\/(.+)$/.exec(hash);
    if (m) return '#/' + deepPath(m[1]);
    m = /^#\/?(operation\/)?([A-Za-z0-9_.-]+)$/.exec(hash);
    if (!m || !doc) return '';
    const id = m[2];
    if (!m[1] && (doc.tags || []).some(function (t) { return t.name === id; })) return '';
    for (const item of Object.values(doc.paths || {})) {
      for (const op of Object.values(item || {})) {
        if (op && op.operationId === id) {
          const tag = (op.tags && op.tags[0]) || 'default';
          return '#/' + deepPath(tag) + '/' + deepPath(op.operationId);
        }
      }
    }
    return '';
  }

  // canonical replaces a legacy link in the address bar by Swagger UI's form
  // and returns the hash to show.
  function canonical() {
    const hash = decodeURIComponent(location.hash);
    const to = legacyLink(hash);
    if (!to) return hash;
    history.replaceState(null, '', to);
    return decodeURIComponent(to);
  }

  canonical(); // a tag link needs no document: rewritten before Swagger UI reads it
  root.textContent = '';
  window.ui = SwaggerUIBundle({
    url: spec,
    domNode: root,
    deepLinking: true,
    persistAuthorization: true,
    filter: true,
    displayOperationId: true,
    displayRequestDuration: true,
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    onComplete: function () {
      doc = window.ui.specSelectors.specJson().toJS();
      const hash = decodeURIComponent(location.hash);
      const to = canonical();
      if (to !== hash) window.ui.layoutActions.parseDeepLinkHash(to);
    }
  });
  // Swagger UI reads the link once, at load: a link followed within the page
  // (from a description, or typed) is shown too.
  window.addEventListener('hashchange', function () {
    window.ui.layoutActions.parseDeepLinkHash(canonical());
  });
})();
