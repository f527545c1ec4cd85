// The inspector's page: it polls GET /api/requests/http, shows one
// request, and replays it (POST /api/requests/http), as is or changed.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const api = "/api/requests/http";
  let selected = "";   // the ID shown
  let shown = "";      // the list's IDs as last drawn
  let current = null;  // the capture shown

  function tunnel() { return $("tunnel").value; }

  // list fetches the captures of the endpoint chosen, at most limit.
  async function list(limit) {
    let q = "?limit=" + limit;
    if (tunnel()) q += "&tunnel_name=" + encodeURIComponent(tunnel());
    const r = await fetch(api + q, { headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(r.status);
    return (await r.json()).requests;
  }

  // poll asks each second for the newest capture only (its bodies can
  // be 128 KiB), and for the whole list when it is not the one shown.
  async function poll() {
    try {
      const newest = await list(1);
      const first = newest.length ? newest[0].id : "";
      if (first !== shown.split(",")[0] || shown === "") draw(await list(1000));
      $("live-state").textContent = "Live.";
    } catch (e) {
      $("live-state").textContent = "The agent does not answer; retrying.";
    }
    setTimeout(poll, 1000);
  }

  function draw(list) {
    const ids = list.map((c) => c.id).join(",");
    if (ids === shown) return;
    shown = ids;
    $("empty").hidden = list.length > 0;
    const ol = $("requests");
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.id : "";
    ol.replaceChildren(...list.map(item));
    if (focused) { const b = ol.querySelector('button[data-id="' + CSS.escape(focused) + '"]'); if (b) b.focus(); }
  }

  function item(c) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.id = c.id;
    b.setAttribute("aria-current", c.id === selected ? "true" : "false");
    const code = c.response ? c.response.status_code : "—";
    b.append(span("method", c.request.method), span("uri", c.request.uri),
      span("code" + (code >= 400 || !c.response ? " err" : ""), String(code)));
    b.title = c.tunnel_name + " · " + new Date(c.start).toLocaleTimeString() + " · " + ms(c.duration);
    b.addEventListener("click", () => show(c.id));
    li.append(b);
    return li;
  }

  function span(cls, text) { const s = document.createElement("span"); s.className = cls; s.textContent = text; return s; }
  function ms(ns) { return (ns / 1e6).toFixed(ns < 1e7 ? 2 : 0) + " ms"; }

  async function show(id) {
    const r = await fetch(api + "/" + encodeURIComponent(id));
    if (!r.ok) return;
    const c = await r.json();
    selected = id;
    current = c;
    for (const b of $("requests").querySelectorAll("button")) b.setAttribute("aria-current", b.dataset.id === id ? "true" : "false");
    $("detail").hidden = false;
    $("detail-title").textContent = c.request.method + " " + c.request.uri;
    $("summary").textContent = c.tunnel_name + " · from " + c.remote_addr + " · " + new Date(c.start).toLocaleString() + " · " + ms(c.duration);
    headers($("req-headers"), c.request.headers);
    body($("req-body"), c.request);
    $("resp-status").textContent = c.response ? c.response.status : "(none: the connection ended first)";
    headers($("resp-headers"), c.response ? c.response.headers : {});
    body($("resp-body"), c.response);
    fillForm(c);
  }

  function headers(table, h) {
    const rows = Object.keys(h || {}).sort().flatMap((k) => h[k].map((v) => {
      const tr = document.createElement("tr");
      const th = document.createElement("th"); th.scope = "row"; th.textContent = k;
      const td = document.createElement("td"); td.textContent = v;
      tr.append(th, td);
      return tr;
    }));
    table.tBodies[0].replaceChildren(...rows);
  }

  // bytesOf returns the body of a message whose raw is base64.
  function bytesOf(m) {
    const bin = atob(m.raw || "");
    const all = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
    for (let i = 0; i + 3 < all.length; i++) {
      if (all[i] === 13 && all[i + 1] === 10 && all[i + 2] === 13 && all[i + 3] === 10) return all.subarray(i + 4);
    }
    return new Uint8Array(0);
  }

  function header(m, name) {
    for (const k of Object.keys(m.headers || {})) if (k.toLowerCase() === name) return m.headers[k][0];
    return "";
  }

  function bodyText(m) {
    const b = bytesOf(m);
    let text;
    try { text = new TextDecoder("utf-8", { fatal: true }).decode(b); } catch (e) { return null; }
    if (/[\x00-\x08\x0e-\x1f]/.test(text)) return null;
    return text;
  }

  function body(pre, m) {
    if (!m) { pre.textContent = ""; return; }
    const size = m.body_size + " bytes" + (m.truncated ? " (the first " + bytesOf(m).length + " captured)" : "");
    if (m.body_size === 0) { pre.textContent = "(no body)"; return; }
    const text = bodyText(m);
    if (text === null) { pre.textContent = "(binary, " + size + ")"; return; }
    let out = text;
    if (/json/i.test(header(m, "content-type")) && !m.truncated) {
      try { out = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* shown as sent */ }
    }
    pre.textContent = out + (m.truncated ? "\n… (" + size + ")" : "");
  }

  function fillForm(c) {
    $("m-method").value = c.request.method;
    $("m-uri").value = c.request.uri;
    const h = c.request.headers || {};
    $("m-headers").value = Object.keys(h).sort().filter((k) => k.toLowerCase() !== "content-length")
      .flatMap((k) => h[k].map((v) => k + ": " + v)).join("\n");
    const text = bodyText(c.request);
    $("m-body").value = text === null ? "" : text;
  }

  async function replay(modifications) {
    if (!current) return;
    const req = { id: current.id };
    if (modifications) req.modifications = modifications;
    $("replay-state").textContent = "Replaying…";
    const r = await fetch(api, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(req) });
    if (r.ok) { $("replay-state").textContent = "Replayed: the new request is at the top of the list."; return; }
    let msg = r.status + "";
    try { msg = (await r.json()).msg; } catch (e) { /* the status */ }
    $("replay-state").textContent = "Replay failed: " + msg;
  }

  function modifications() {
    const headers = {};
    for (const line of $("m-headers").value.split("\n")) {
      const i = line.indexOf(":");
      if (i <= 0) continue;
      const k = line.slice(0, i).trim(), v = line.slice(i + 1).trim();
      (headers[k] = headers[k] || []).push(v);
    }
    return { method: $("m-method").value.trim(), uri: $("m-uri").value.trim(), headers: headers, body: $("m-body").value };
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("replay").addEventListener("click", () => replay(null));
    $("edit").addEventListener("click", () => {
      const open = $("modify").hidden;
      $("modify").hidden = !open;
      $("edit").setAttribute("aria-expanded", String(open));
      if (open) $("m-method").focus();
    });
    $("modify").addEventListener("submit", (e) => { e.preventDefault(); replay(modifications()); });
    $("tunnel").addEventListener("change", () => { shown = ""; });
    $("clear").addEventListener("click", async () => {
      await fetch(api, { method: "DELETE" });
      shown = "";
      $("detail").hidden = true;
      current = null;
      selected = "";
    });
    poll();
  });
})();
