// The dashboard's only holder of the caller's token. It is kept in sessionStorage: bound to this
// origin (scheme, host and port) and this tab, where a cookie would go to every port of the
// host. Every request this script makes sends it as X-SLURM-USER-TOKEN, the server's only
// source of identity; a navigation cannot send that header, so the server answers it with a
// shell page and this script fetches the same URL with the header and shows the server's page.
// Then, on the overview, every 2 s: fetch /dashboard/live with the page's search and swap in the
// sections the server rendered (and escaped). A row's open form is left alone.
"use strict";
(function () {
  const KEY = "slurm_jwt";
  const HEADER = "X-SLURM-USER-TOKEN";
  const PERIOD_MS = 2000;
  let timer = null;

  const token = () => window.sessionStorage.getItem(KEY) || "";

  function withToken(init, t) {  // init for fetch(); with no token kept, send no header at all
    const headers = Object.assign({"Accept": "text/html"}, init && init.headers);
    t = t === undefined ? token() : t;
    if (t) headers[HEADER] = t;
    return Object.assign({}, init, {headers: headers, credentials: "omit"});
  }

  function cleanToken(text) {  // what `scontrol token` prints (SLURM_JWT=...) or the bare token
    text = (text || "").trim();
    return text.startsWith("SLURM_JWT=") ? text.slice("SLURM_JWT=".length).trim() : text;
  }

  function localPath(url) {  // a path of this origin, or null: the token never leaves it
    try {
      const u = new URL(url, window.location.href);
      return u.origin === window.location.origin ? u.pathname + u.search + u.hash : null;
    } catch (e) {
      return null;
    }
  }

  function toLogin() {
    window.sessionStorage.removeItem(KEY);
    const here = window.location.pathname === "/login" ? "/" : window.location.pathname + window.location.search;
    window.location.assign("/login?" + new URLSearchParams({next: here}));
  }

  // Show a page the server rendered: its title, header and main replace ours (its script is
  // this one, already running). `url` goes into the address bar when the page is another's.
  function show(html, url, replace) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    document.title = doc.title;
    for (const tag of ["header", "main"]) {
      const mine = document.querySelector(tag), theirs = doc.querySelector(tag);
      if (mine && theirs) mine.replaceWith(document.importNode(theirs, true));
    }
    if (url && url !== window.location.pathname + window.location.search + window.location.hash) {
      window.history[replace ? "replaceState" : "pushState"]({}, "", url);
    }
    startLive();
  }

  async function load(path, replace) {
    const r = await fetch(path, withToken());
    if (r.status === 401) {  // the controller refused the kept token (expired, revoked)
      window.sessionStorage.removeItem(KEY);
      if (!document.getElementById("login-form")) { toLogin(); return; }
    }
    show(await r.text(), path, replace);
  }

  async function logIn(form) {
    const t = cleanToken(form.querySelector("textarea").value);
    const next = localPath(new URLSearchParams(window.location.search).get("next") || "/") || "/";
    const error = document.getElementById("login-error") || document.createElement("p");
    error.id = "login-error";
    error.className = "error";
    if (!t) {
      error.textContent = "Paste the token `scontrol token` printed.";
      form.before(error);
      return;
    }
    // The controller, not this page, says whether the token is good: ask for the page with it.
    const r = await fetch(next, withToken({}, t));
    if (r.status === 401) {
      const doc = new DOMParser().parseFromString(await r.text(), "text/html");
      const said = doc.getElementById("login-error");
      error.textContent = said ? said.textContent : "The controller refused the token.";
      form.before(error);
      return;
    }
    window.sessionStorage.setItem(KEY, t);
    show(await r.text(), next, true);
  }

  // An operator's action: the form's fields (and the button pressed) POSTed with the header.
  // The server answers a redirect to the page to show, which fetch follows with the header.
  // Attributes, not form.action/form.method: a field named "action" (ours) shadows those.
  async function post(form, submitter) {
    const action = submitter && submitter.hasAttribute("formaction")
      ? submitter.getAttribute("formaction") : form.getAttribute("action");
    const path = localPath(action || window.location.href);
    if (path === null) return;
    const body = new URLSearchParams(new FormData(form));
    if (submitter && submitter.name) body.append(submitter.name, submitter.value);
    const r = await fetch(path, withToken({
      method: "POST", body: body,
      headers: {"Content-Type": "application/x-www-form-urlencoded"}}));
    if (r.status === 401) { toLogin(); return; }
    show(await r.text(), r.redirected ? localPath(r.url) : null, false);
  }

  document.addEventListener("submit", function (ev) {
    const form = ev.target;
    if (form.id === "login-form") {
      ev.preventDefault();
      logIn(form);
    } else if ((form.getAttribute("method") || "").toLowerCase() === "post") {
      ev.preventDefault();
      post(form, ev.submitter);
    }
  });

  document.addEventListener("click", function (ev) {
    if (ev.target.id === "logout") {
      window.sessionStorage.removeItem(KEY);
      window.location.assign("/login");
    }
  });

  window.addEventListener("popstate", function () {
    load(window.location.pathname + window.location.search, true);
  });

  function busy() {  // someone typing a drain reason: do not replace the form under them
    const a = document.activeElement;
    return a && a.closest && a.closest("form.action") !== null;
  }

  function startLive() {
    window.clearTimeout(timer);
    if (document.getElementById("live-status")) timer = window.setTimeout(refresh, PERIOD_MS);
  }

  async function refresh() {
    const status = document.getElementById("live-status");
    if (!status) return;  // another page is shown now
    const params = new URLSearchParams(window.location.search);
    const url = "/dashboard/live?" + new URLSearchParams({q: params.get("q") || "", page: params.get("page") || "0"});
    try {
      const r = await fetch(url, withToken({headers: {"Accept": "application/json"}}));
      if (r.status === 401) { toLogin(); return; }
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
      startLive();
    }
  }

  if (document.getElementById("shell")) {
    if (token()) load(window.location.pathname + window.location.search + window.location.hash, true);
    else toLogin();
  } else {
    startLive();
  }
})();
