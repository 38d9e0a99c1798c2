// Keeps the overview current: every 2 s, fetch /dashboard/live with the page's search and
// swap in the sections the server rendered (and escaped). A row's open form is left alone.
"use strict";
(function () {
  const PERIOD_MS = 2000;
  const status = document.getElementById("live-status");
  const params = new URLSearchParams(window.location.search);
  const url = "/dashboard/live?" + new URLSearchParams({q: params.get("q") || "", page: params.get("page") || "0"});

  function busy() {  // someone typing a drain reason: do not replace the form under them
    const a = document.activeElement;
    return a && a.closest && a.closest("form.action") !== null;
  }

  async function refresh() {
    try {
      const r = await fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}});
      if (r.status === 401) { window.location.assign("/login"); return; }
      if (!r.ok) { status.textContent = "update failed: HTTP " + r.status; return; }
      const data = await r.json();
      if (!busy()) {
        for (const el of document.querySelectorAll("[data-section]")) {
          const html = data.sections[el.dataset.section];
          if (html !== undefined) el.innerHTML = html;
        }
      }
      document.getElementById("now").textContent = data.now;
      status.textContent = "";
    } catch (e) {
      status.textContent = "update failed: " + e;
    } finally {
      window.setTimeout(refresh, PERIOD_MS);
    }
  }
  window.setTimeout(refresh, PERIOD_MS);
})();
