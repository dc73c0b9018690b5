// The operator's page: polls /api/models/<model> and draws each product's
// recent bins as SVG. No framework, no external assets.
"use strict";

const POLL_MS = 2000;
const W = 560, H = 220, M = { l: 40, r: 10, t: 8, b: 22 };
const NS = "http://www.w3.org/2000/svg";
let current = "";
let timer = null;

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function fmtTime(ms) {
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, "0");
  return `${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}`;
}

// line returns an SVG path through the points that have a value, broken
// where a bin has none.
function line(pts, x, y, get) {
  let d = "", pen = false;
  for (const p of pts) {
    const v = get(p);
    if (v === undefined || v === null) { pen = false; continue; }
    d += (pen ? "L" : "M") + x(p.t).toFixed(1) + "," + y(v).toFixed(1);
    pen = true;
  }
  return d;
}

// band returns a closed SVG path between lo and hi over consecutive points
// that have both.
function band(pts, x, y, lo, hi) {
  let d = "", run = [];
  const flush = () => {
    if (run.length > 0) {
      d += "M" + run.map((p) => x(p.t).toFixed(1) + "," + y(hi(p)).toFixed(1)).join("L");
      d += "L" + run.slice().reverse().map((p) => x(p.t).toFixed(1) + "," + y(lo(p)).toFixed(1)).join("L") + "Z";
    }
    run = [];
  };
  for (const p of pts) {
    if (lo(p) === undefined) flush(); else run.push(p);
  }
  flush();
  return d;
}

function ticks(lo, hi, n) {
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((s) => s * mag).find((s) => s >= step0);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}

// chart draws one product: observed demand, censored bins, filtered band
// and mean, smoothed mean, and the forecast fan after the newest bin.
function chart(prod, binMs) {
  const pts = prod.bins.map((b) => ({
    t: Date.parse(b.bin_start) + binMs / 2, demand: b.demand, censored: b.censored,
    f: b.filtered, s: b.smoothed, away: b.turned_away, lost: b.lost,
  }));
  const fc = prod.forecast.map((f) => ({ t: Date.parse(f.bin_start) + binMs / 2, f: f }));
  const all = pts.concat(fc);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": prod.product });
  if (all.length === 0) {
    el("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, svg).textContent = "no bins yet";
    return svg;
  }
  let ymax = 1, ymin = 0;
  for (const p of pts) {
    for (const v of [p.demand, p.f && p.f.q95, p.s && p.s.q95]) if (v != null) ymax = Math.max(ymax, v);
    for (const v of [p.f && p.f.q05, p.s && p.s.q05]) if (v != null) ymin = Math.min(ymin, v);
  }
  for (const p of fc) { ymax = Math.max(ymax, p.f.q95); ymin = Math.min(ymin, p.f.q05); }
  const t0 = all[0].t - binMs / 2, t1 = all[all.length - 1].t + binMs / 2;
  const x = (t) => M.l + (t - t0) / (t1 - t0) * (W - M.l - M.r);
  const y = (v) => H - M.b - (v - ymin) / (ymax - ymin) * (H - M.t - M.b);
  for (const v of ticks(ymin, ymax, 4)) {
    el("line", { class: "grid", x1: M.l, x2: W - M.r, y1: y(v), y2: y(v) }, svg);
    el("text", { x: M.l - 5, y: y(v) + 4, "text-anchor": "end" }, svg).textContent = +v.toFixed(2);
  }
  const HOUR = 3600e3, span = t1 - t0;
  const step = [1, 2, 3, 6, 12, 24, 48, 168, 336].map((h) => h * HOUR).find((s) => s >= span / 6) || span / 5;
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    el("text", { x: x(t), y: H - 6, "text-anchor": "middle" }, svg).textContent = fmtTime(t);
  }
  el("line", { class: "axis", x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }, svg);
  el("path", { class: "filt-band", d: band(pts, x, y, (p) => p.f && p.f.q05, (p) => p.f && p.f.q95) }, svg);
  if (fc.length > 0 && pts.length > 0) {
    const last = pts[pts.length - 1];
    const fan = (last.f ? [{ t: last.t, f: last.f }] : []).concat(fc);
    el("path", { class: "fc-band", d: band(fan, x, y, (p) => p.f.q05, (p) => p.f.q95) }, svg);
    el("path", { class: "fc", d: line(fan, x, y, (p) => p.f.mean) }, svg);
    el("line", { class: "now", x1: x(last.t + binMs / 2), x2: x(last.t + binMs / 2), y1: M.t, y2: H - M.b }, svg);
  }
  el("path", { class: "filt", d: line(pts, x, y, (p) => p.f && p.f.mean) }, svg);
  el("path", { class: "smooth", d: line(pts, x, y, (p) => p.s && p.s.mean) }, svg);
  for (const p of pts) {
    const away = p.away != null ? `, turned away ${p.away.toFixed(2)} (lost ${(p.lost || 0).toFixed(2)})` : "";
    if (p.demand == null) {
      if (p.away != null) { // full, nobody served: a hollow marker on the axis
        el("path", { class: "full", d: `M${x(p.t) - 4},${y(0) - 0.5}L${x(p.t) + 4},${y(0) - 0.5}L${x(p.t)},${y(0) - 8}Z` }, svg)
          .appendChild(el("title", {})).textContent = `${fmtTime(p.t)} full, none served${away}`;
      }
      continue;
    }
    const cx = x(p.t), cy = y(p.demand);
    if (p.censored) {
      el("path", { class: "cens", d: `M${cx - 4},${cy + 3.5}L${cx + 4},${cy + 3.5}L${cx},${cy - 4}Z` }, svg)
        .appendChild(el("title", {})).textContent = `${fmtTime(p.t)} censored at ${p.demand}${away}`;
    } else {
      el("circle", { class: "obs", cx: cx, cy: cy, r: 2.4 }, svg)
        .appendChild(el("title", {})).textContent = `${fmtTime(p.t)} demand ${p.demand}`;
    }
  }
  return svg;
}

function card(prod, binMs) {
  const div = document.createElement("div");
  div.className = "card";
  const h = document.createElement("h2");
  const newest = prod.bins.filter((b) => b.filtered).pop();
  h.textContent = prod.product;
  const small = document.createElement("small");
  small.textContent = newest ? `latent ${newest.filtered.mean.toFixed(1)} [${newest.filtered.q05.toFixed(1)}, ${newest.filtered.q95.toFixed(1)}]` : "";
  const away = prod.bins.reduce((a, b) => a + (b.turned_away || 0), 0), lost = prod.bins.reduce((a, b) => a + (b.lost || 0), 0);
  if (prod.bins.some((b) => b.turned_away != null)) small.textContent += ` · turned away ${away.toFixed(1)} (lost ${lost.toFixed(1)}) over the bins shown`;
  h.appendChild(small);
  div.appendChild(h);
  div.appendChild(chart(prod, binMs));
  return div;
}

function showStatus(m) {
  const s = m.status || {};
  const el = document.getElementById("status");
  const last = s.last_bin ? fmtTime(Date.parse(s.last_bin)) + " UTC" : "none yet";
  el.textContent = `last bin ${last} · ${s.bins_processed || 0} bins · revision ${s.revision || 0}` +
    (s.resmoothing ? " · re-smoothing" : "") + ` · updated ${new Date().toLocaleTimeString()}`;
  el.classList.remove("stale");
  const n = m.products.length ? m.products[0].bins.length : 0;
  document.getElementById("note").textContent = `${n} most recent bins (the page keeps at most 168 per model); times in UTC.`;
}

async function refresh() {
  if (!current) return;
  try {
    const resp = await fetch("api/models/" + encodeURIComponent(current), { cache: "no-store" });
    if (!resp.ok) throw new Error(resp.status + " " + (await resp.text()));
    const m = await resp.json();
    const charts = document.getElementById("charts");
    charts.replaceChildren(...m.products.map((p) => card(p, m.bin_seconds * 1000)));
    showStatus(m);
    document.body.dataset.bins = m.products.length ? m.products[0].bins.length : 0;
  } catch (err) {
    const st = document.getElementById("status");
    st.textContent = "not updating: " + err.message;
    st.classList.add("stale");
  }
}

// The actions of each rebalanced system (/api/risk): per station the move
// to s* and by when, P(empty) and P(full) within the stated horizon;
// urgent rows first and red; a stale feed marked, its last ranking kept.
function pct(v) { return (100 * v).toFixed(0) + "%"; }

function fmtHorizon(sec) {
  if (!sec) return "the horizon";
  if (sec < 60) return `${sec} s`;
  return sec % 3600 === 0 ? `${sec / 3600} h` : `${Math.round(sec / 60)} min`;
}

// fmtBy writes a by-when: to the second when the risk horizon is under
// an hour (bins of seconds or minutes), else as the charts' times.
function fmtBy(ms, horizonSec) {
  if (!horizonSec || horizonSec >= 3600) return fmtTime(ms);
  return new Date(ms).toISOString().slice(11, 19);
}

function fmtMove(m) {
  if (m === 0) return "none";
  const n = Math.abs(m);
  return `${m > 0 ? "+" : "\u2212"}${n} bike${n === 1 ? "" : "s"}`;
}

function riskLine(s, horizonSec) {
  const tr = document.createElement("tr");
  const ok = s.status === "ok";
  const station = s.name ? `${s.name} (${s.station})` : s.station;
  const cells = ok ? [station, `${s.bikes} / ${s.capacity}`, fmtMove(s.move), s.by ? fmtBy(Date.parse(s.by), horizonSec) : "",
    pct(s.p_empty), pct(s.p_full), s.best, "usable"]
    : [station, "", "", "", "", "", "", s.status + (s.detail ? ": " + s.detail : "")];
  for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); }
  if (ok && s.urgent) tr.className = "hot";
  return tr;
}

function riskTable(sys) {
  const div = document.createElement("div");
  const when = sys.bin_end ? `as of ${fmtBy(Date.parse(sys.bin_end), sys.horizon_seconds)} UTC` +
    (sys.restored ? " (restored from the risk bucket at start)" : "") : "no ranking yet";
  const counts = Object.entries(sys.statuses).map(([k, n]) => `${n} ${k}`).join(", ");
  const h = fmtHorizon(sys.horizon_seconds);
  const h2 = document.createElement("h2");
  h2.textContent = `Actions: ${sys.name} `;
  const small = document.createElement("small");
  small.textContent = `${sys.pickups} / ${sys.returns} \u00b7 ${when}${counts ? " \u00b7 " + counts : ""} \u00b7 ` +
    `red: urgent, P(empty) for an add or P(full) for a removal \u2265 ${pct(sys.urgency_threshold)} within ${h} (${sys.urgent})`;
  h2.appendChild(small);
  div.appendChild(h2);
  if (sys.waiting) {
    const note = document.createElement("p");
    note.className = "waiting-note";
    note.textContent = "Waiting: " + sys.waiting;
    div.appendChild(note);
  }
  if (sys.stale) {
    const note = document.createElement("p");
    note.className = "stale-note";
    note.textContent = "Stale: " + sys.stale_detail;
    div.appendChild(note);
    div.classList.add("stale");
  }
  const table = document.createElement("table");
  const head = ["station", "bikes / docks", "move", "by (UTC)", `P(empty within ${h})`, `P(full within ${h})`, "s* (bikes)", "status"];
  const thead = document.createElement("thead");
  const hr = document.createElement("tr");
  for (const c of head) { const th = document.createElement("th"); th.textContent = c; hr.appendChild(th); }
  thead.appendChild(hr);
  table.appendChild(thead);
  const body = document.createElement("tbody");
  for (const s of sys.stations) body.appendChild(riskLine(s, sys.horizon_seconds));
  table.appendChild(body);
  div.appendChild(table);
  return div;
}

async function refreshRisk() {
  try {
    const resp = await fetch("api/risk", { cache: "no-store" });
    if (!resp.ok) return;
    const systems = await resp.json();
    const sec = document.getElementById("risk");
    sec.hidden = systems.length === 0;
    sec.replaceChildren(...systems.map(riskTable));
  } catch (err) { /* the charts' status line reports a daemon that stopped answering */ }
}

async function init() {
  const resp = await fetch("api/models", { cache: "no-store" });
  const idx = await resp.json();
  const sel = document.getElementById("model");
  const models = idx.models || []; // cluster mode: the models this instance runs now
  for (const m of models) sel.appendChild(new Option(`${m.model} (${m.products.length})`, m.model));
  const want = new URLSearchParams(location.search).get("model");
  current = want && models.some((m) => m.model === want) ? want : (models[0] || {}).model;
  if (idx.elsewhere && idx.elsewhere.length) {
    document.getElementById("elsewhere").textContent = "On other instances: " +
      idx.elsewhere.map((e) => `${e.model} on ${e.instance || "no instance now"}`).join("; ");
  }
  if (!current) document.getElementById("status").textContent = "this instance runs no model now";
  sel.value = current;
  sel.onchange = () => { current = sel.value; refresh(); };
  const b = idx.build;
  document.getElementById("build").textContent = `dcgpd ${b.version} · ${b.revision.slice(0, 12)} · ${b.go_version}`;
  await refresh();
  await refreshRisk();
  timer = setInterval(() => { refresh(); refreshRisk(); }, POLL_MS);
}

init().catch((err) => { document.getElementById("status").textContent = "error: " + err.message; });
