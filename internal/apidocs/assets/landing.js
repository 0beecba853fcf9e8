"use strict";
// The landing page: the gateway's health and readiness, and the base URL of
// the API as this page sees it. Every URL is relative to the page, so that
// the page works wherever the gateway is mounted.
(function () {
  function show(id, ok, text) {
    var el = document.getElementById(id);
    el.textContent = text;
    el.className = "badge " + (ok ? "ok" : "bad");
  }
  function probe(id, path, label) {
    fetch(new URL(path, document.baseURI), { headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.json().then(function (b) {
          var ok = r.ok && (b.ready === undefined || b.ready === true);
          show(id, ok, label + (ok ? " ✓" : " ✗"));
        });
      })
      .catch(function () { show(id, false, label + " ✗"); });
  }
  probe("health", "healthz", "alive");
  probe("ready", "readyz", "ready");
  var base = new URL(".", document.baseURI).href.replace(/\/$/, "");
  document.getElementById("base").textContent = base;
})();
