/// The operator's console as served: one page, its script and its style, plain HTML,
/// JavaScript and CSS with no build step and nothing loaded from elsewhere. The script puts
/// every value it shows in the page with `textContent` (never as HTML).
enum ConsolePage {
    static let html = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>FieldMerge console</title>
<link rel="stylesheet" href="/console/console.css">
<script src="/console/console.js" defer></script>
</head>
<body>
<header>
  <h1>FieldMerge console</h1>
  <span id="storage" class="muted"></span>
  <span class="spacer"></span>
  <span id="status" class="status" data-state="loading">loading…</span>
</header>
<form id="login" hidden>
  <p id="login-reason"></p>
  <label>Bearer token (a JWT with the console's role) <input id="token" type="password" autocomplete="off" size="60"></label>
  <button type="submit">Open</button>
</form>
<main id="main" hidden>
  <section class="tiles">
    <div class="tile"><span class="label">Revision</span><span id="revision" class="value">–</span><span id="tenants" class="note"></span></div>
    <div class="tile"><span class="label">Revisions / min (5 min)</span><span id="revision-rate" class="value">–</span></div>
    <div class="tile"><span class="label">Requests / min (5 min)</span><span id="request-rate" class="value">–</span></div>
    <div class="tile"><span class="label">Conflicts (change sets)</span><span id="conflicts" class="value">–</span><span id="conflicts-hour" class="note"></span></div>
    <div class="tile"><span class="label">Refused records</span><span id="refusals" class="value">–</span><span id="refusals-hour" class="note"></span></div>
    <div class="tile"><span class="label">Failed requests</span><span id="failed" class="value">–</span><span id="failed-detail" class="note"></span></div>
    <div class="tile"><span class="label">Devices</span><span id="devices-known" class="value">–</span><span id="devices-detail" class="note"></span></div>
    <div class="tile"><span class="label">Up since</span><span id="uptime" class="value">–</span><span id="started" class="note"></span></div>
  </section>
  <section>
    <h2>Last hour, per minute</h2>
    <div id="charts" class="charts"></div>
  </section>
  <section>
    <h2>Devices, the furthest behind first <span id="devices-shown" class="muted"></span></h2>
    <table id="devices">
      <thead><tr><th>Client</th><th>User</th><th>Tenant</th><th>Last seen</th><th class="num">Reached</th><th class="num">Behind</th><th class="num">Requests</th><th class="num">Conflicts</th><th class="num">Refused</th><th>Last answer</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <div class="columns">
    <section>
      <h2>Largest entities</h2>
      <table id="entities">
        <thead><tr><th>Entity</th><th class="num">Records</th><th class="num">Tombstones</th><th class="num">Applied</th><th class="num">Conflicts</th><th class="num">Refused</th></tr></thead>
        <tbody></tbody>
      </table>
      <p id="dataset" class="muted"></p>
    </section>
    <section>
      <h2>Refusals by entity and code</h2>
      <table id="refusal-codes">
        <thead><tr><th>Entity</th><th>Code</th><th class="num">Records</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
  </div>
  <section>
    <h2>Last failed requests</h2>
    <table id="failures">
      <thead><tr><th>Time</th><th class="num">Status</th><th>Code</th><th>Client</th><th>Message</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <p class="muted">Counts are since this process started (<code>GET /console/api/overview</code>, refreshed every 5 s); the data set's numbers are read from its storage at most every 10 s. Specs/http.md, “The operator's console”.</p>
</main>
</body>
</html>
"""#

    static let script = #"""
"use strict";
(function () {
  const REFRESH_MS = 5000;
  const $ = (id) => document.getElementById(id);

  // The token: from the page's fragment (#token=…, then removed from the address bar),
  // else this tab's session storage, else none (a loopback client without authentication).
  function takeToken() {
    const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem("fieldmerge.console.token", decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem("fieldmerge.console.token");
  }

  function text(id, value) { $(id).textContent = value == null ? "–" : String(value); }
  function number(n) { return n == null ? "–" : Number(n).toLocaleString("en-US"); }
  function ago(ms, now) {
    const s = Math.max(0, Math.round((now - ms) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min ago";
    return Math.floor(s / 86400) + " d ago";
  }
  function time(ms) { return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z"); }

  function row(tbody, cells, className) {
    const tr = document.createElement("tr");
    if (className) tr.className = className;
    for (const cell of cells) {
      const td = document.createElement("td");
      const value = typeof cell === "object" && cell !== null ? cell : { text: cell };
      td.textContent = value.text == null ? "–" : String(value.text);
      if (value.num) td.className = "num";
      if (value.title) td.title = value.title;
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  function fill(id, rows, empty, columns) {
    const tbody = $(id).tBodies[0];
    tbody.replaceChildren();
    if (rows.length === 0) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = columns;
      td.className = "muted";
      td.textContent = empty;
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
    return tbody;
  }

  const SVG = "http://www.w3.org/2000/svg";
  function chart(title, minutes, key, className) {
    const box = document.createElement("figure");
    box.className = "chart " + className;
    const caption = document.createElement("figcaption");
    const total = minutes.reduce((sum, m) => sum + m[key], 0);
    caption.textContent = title + ": " + number(total) + " in the last hour";
    const max = Math.max(1, ...minutes.map((m) => m[key]));
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 240 60");
    svg.setAttribute("preserveAspectRatio", "none");
    minutes.forEach((m, i) => {
      const h = (m[key] / max) * 58;
      const bar = document.createElementNS(SVG, "rect");
      bar.setAttribute("x", String(i * 4));
      bar.setAttribute("y", String(60 - h));
      bar.setAttribute("width", "3");
      bar.setAttribute("height", String(Math.max(h, m[key] > 0 ? 1 : 0)));
      const tip = document.createElementNS(SVG, "title");
      tip.textContent = time(m.minute) + ": " + m[key];
      bar.appendChild(tip);
      svg.appendChild(bar);
    });
    box.appendChild(caption);
    box.appendChild(svg);
    return box;
  }

  function render(o) {
    const now = o.generatedAt;
    text("storage", o.storage ? "serving " + o.storage : "");
    text("revision", number(o.server.revision));
    text("tenants", o.server.tenants ? o.server.tenants.open + " tenants open, " + o.server.tenants.inUse + " in use, " + o.server.tenants.seen + " seen" : "");
    text("revision-rate", number(o.rate.revisionsPerMinute));
    text("request-rate", number(o.rate.requestsPerMinute));
    const hour = o.minutes.reduce((s, m) => ({
      conflicts: s.conflicts + m.conflicts, refusals: s.refusals + m.refusals,
      rejected: s.rejected + m.rejected, retryable: s.retryable + m.retryable }),
      { conflicts: 0, refusals: 0, rejected: 0, retryable: 0 });
    text("conflicts", number(o.totals.conflicts));
    text("conflicts-hour", number(hour.conflicts) + " in the last hour");
    text("refusals", number(o.totals.refusals));
    text("refusals-hour", number(hour.refusals) + " in the last hour");
    text("failed", number(o.totals.rejected + o.totals.retryable));
    text("failed-detail", number(o.totals.rejected) + " refused as sent, " + number(o.totals.retryable) + " retryable (5xx)");
    $("failed").dataset.alert = hour.retryable > 0 ? "bad" : hour.rejected > 0 ? "warn" : "";
    text("devices-known", number(o.devices.known));
    text("devices-detail", number(o.devices.syncedLastHour) + " synced in the last hour");
    text("uptime", ago(o.startedAt, now).replace(" ago", ""));
    text("started", "started " + time(o.startedAt));

    const charts = $("charts");
    charts.replaceChildren(
      chart("Requests", o.minutes, "requests", "requests"),
      chart("Revisions committed", o.minutes, "revisions", "revisions"),
      chart("Conflicts", o.minutes, "conflicts", "conflicts"),
      chart("Refused records", o.minutes, "refusals", "refusals"),
      chart("Failed requests (refused as sent)", o.minutes, "rejected", "rejected"),
      chart("Failed requests (retryable)", o.minutes, "retryable", "retryable"));

    text("devices-shown", "(" + o.devices.list.length + " of " + number(o.devices.known) + ")");
    const devices = fill("devices", o.devices.list, "no device has synced", 10);
    for (const d of o.devices.list) {
      const answer = d.lastStatus == null ? "not since this process started"
        : d.lastError ? d.lastStatus + " " + d.lastError : d.hasMore ? "200, more to catch up" : String(d.lastStatus);
      const className = d.lastError ? "bad" : d.behind > 0 ? "warn" : "";
      row(devices, [d.client, d.user, d.tenant, { text: ago(d.lastSeen, now), title: time(d.lastSeen) },
        { text: number(d.reached), num: true }, { text: d.behind == null ? "unknown" : number(d.behind), num: true },
        { text: number(d.requests), num: true }, { text: number(d.conflicts), num: true },
        { text: number(d.refusals), num: true }, answer], className);
    }

    const entities = fill("entities", o.entities, "no entity yet", 6);
    for (const e of o.entities) {
      row(entities, [e.name, { text: number(e.records), num: true }, { text: number(e.tombstones), num: true },
        { text: number(e.applied), num: true }, { text: number(e.conflicts), num: true }, { text: number(e.refusals), num: true }]);
    }
    const ds = o.dataSet;
    text("dataset", ds.available
      ? "Data set: " + number(ds.logEntries) + " log entries, " + number(ds.storedReplies) + " stored replies"
        + (ds.fileBytes != null ? ", " + number(Math.round(ds.fileBytes / 1024)) + " KiB on disk (" + number(Math.round(ds.freeBytes / 1024)) + " KiB free)" : "")
        + ", read " + ago(ds.readAt, now) + ". Records, tombstones: the storage's; applied, conflicts, refused: since start."
      : "Records and tombstones are not shown: " + ds.note + ".");

    const codes = fill("refusal-codes", o.refusals, "no record refused since start", 3);
    for (const r of o.refusals) row(codes, [r.entity, r.code, { text: number(r.count), num: true }]);

    const failures = fill("failures", o.failures, "no failed request since start", 5);
    for (const f of o.failures) {
      row(failures, [{ text: ago(f.time, now), title: time(f.time) }, { text: f.status, num: true }, f.code, f.client, f.message],
        f.status >= 500 || f.status === 408 || f.status === 429 ? "bad" : "warn");
    }
    const status = $("status");
    status.dataset.state = "ok";
    status.textContent = "updated " + new Date(now).toLocaleTimeString("en-GB") + (o.viewer ? " · " + o.viewer : "");
  }

  let timer = null;
  async function refresh() {
    const token = takeToken();
    const headers = { "Accept": "application/json" };
    if (token) headers["Authorization"] = "Bearer " + token;
    const status = $("status");
    try {
      const response = await fetch("/console/api/overview", { headers, cache: "no-store", credentials: "omit" });
      if (response.status === 401 || response.status === 403) {
        let message = "HTTP " + response.status;
        try { message = (await response.json()).message || message; } catch (e) { /* not JSON */ }
        sessionStorage.removeItem("fieldmerge.console.token");
        $("main").hidden = true;
        $("login").hidden = false;
        text("login-reason", message);
        status.dataset.state = "bad";
        status.textContent = response.status === 401 ? "not signed in" : "forbidden";
        return;
      }
      if (!response.ok) throw new Error("HTTP " + response.status);
      const overview = await response.json();
      $("login").hidden = true;
      $("main").hidden = false;
      render(overview);
    } catch (error) {
      // Keep the last numbers on screen, and say loudly that they are old.
      status.dataset.state = "bad";
      status.textContent = "cannot reach the server (" + error.message + "); the numbers shown may be old";
    } finally {
      clearTimeout(timer);
      timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (token) sessionStorage.setItem("fieldmerge.console.token", token);
    $("token").value = "";
    refresh();
  });
  refresh();
})();
"""#

    static let style = #"""
:root { color-scheme: dark light; --bg: #111418; --panel: #1a1f26; --line: #2c333d; --text: #e6e9ee; --muted: #8b95a3;
  --ok: #3fb950; --warn: #d29922; --bad: #f85149; --accent: #58a6ff; }
@media (prefers-color-scheme: light) { :root { --bg: #f6f8fa; --panel: #ffffff; --line: #d0d7de; --text: #1f2328; --muted: #59636e; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--text); }
header { display: flex; align-items: baseline; gap: 1em; padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 15px; margin: 20px 0 8px; }
.spacer { flex: 1; }
.muted, .note { color: var(--muted); }
.status { padding: 2px 10px; border-radius: 10px; border: 1px solid var(--line); }
.status[data-state="ok"] { color: var(--ok); border-color: var(--ok); }
.status[data-state="bad"] { color: var(--bad); border-color: var(--bad); font-weight: 600; }
main, form { padding: 0 20px 20px; }
form { padding-top: 20px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 10px; margin-top: 16px; }
.tile { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; display: flex; flex-direction: column; }
.tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile .value { font-size: 26px; font-weight: 600; font-variant-numeric: tabular-nums; }
.tile .note { font-size: 12px; }
.value[data-alert="warn"] { color: var(--warn); }
.value[data-alert="bad"] { color: var(--bad); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 10px; }
.chart { margin: 0; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
.chart figcaption { font-size: 12px; color: var(--muted); margin-bottom: 4px; }
.chart svg { width: 100%; height: 60px; display: block; }
.chart rect { fill: var(--accent); }
.chart.conflicts rect, .chart.rejected rect { fill: var(--warn); }
.chart.refusals rect, .chart.retryable rect { fill: var(--bad); }
.chart.revisions rect { fill: var(--ok); }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 20px; }
table { border-collapse: collapse; width: 100%; background: var(--panel); border: 1px solid var(--line); }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; max-width: 420px; overflow: hidden; text-overflow: ellipsis; }
th { color: var(--muted); font-weight: 500; font-size: 12px; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.warn td:first-child { box-shadow: inset 3px 0 var(--warn); }
tr.bad td:first-child { box-shadow: inset 3px 0 var(--bad); }
tr.bad td:last-child { color: var(--bad); }
code { font-size: 12px; }
"""#
}
