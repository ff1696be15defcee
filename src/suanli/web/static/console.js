// suanli console: reads the JSON API, renders tables (sort, filter, pages) and Plotly plots.
// Every value goes in through textContent, never as HTML.
"use strict";

const PAGE_ROWS = 500;
const POLL_MS = 2000;

async function getJSON(path) {
  const resp = await fetch(path, {credentials: "same-origin", cache: "no-store"});
  if (!resp.ok) throw new Error(path + ": " + resp.status);
  return resp.json();
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmt(v, digits) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number") return v.toLocaleString(undefined, {maximumFractionDigits: digits ?? 3});
  return String(v);
}

// A table of rows (arrays of cells) under columns; click a header to sort, type to filter.
function fillTable(table, columns, rows, opts) {
  opts = opts || {};
  const state = table._state || (table._state = {col: opts.sortCol ?? 0, dir: opts.sortDir ?? 1});
  const head = table.tHead;
  head.replaceChildren();
  const hr = head.insertRow();
  columns.forEach((c, i) => {
    const th = el("th", c + (state.col === i ? (state.dir > 0 ? " ▲" : " ▼") : ""));
    th.addEventListener("click", () => {
      state.dir = state.col === i ? -state.dir : 1; state.col = i;
      fillTable(table, columns, rows, opts);
    });
    hr.appendChild(th);
  });
  const filter = document.getElementById("filter");
  const needle = filter ? filter.value.trim().toLowerCase() : "";
  let shown = rows.filter(r => !needle || r.some(c => String(c.text ?? c).toLowerCase().includes(needle)));
  shown.sort((a, b) => {
    const x = a[state.col].sort ?? a[state.col].text ?? a[state.col];
    const y = b[state.col].sort ?? b[state.col].text ?? b[state.col];
    return (x > y ? 1 : x < y ? -1 : 0) * state.dir;
  });
  const total = shown.length;
  shown = shown.slice(0, PAGE_ROWS);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const r of shown) {
    const tr = body.insertRow();
    for (const c of r) {
      const td = tr.insertCell();
      if (c && c.href) { const a = el("a", c.text); a.href = c.href; td.appendChild(a); }
      else td.textContent = String(c && c.text !== undefined ? c.text : c);
      if (c && c.cls) td.className = c.cls;
    }
  }
  const more = document.getElementById(table.id + "-more");
  if (more) more.textContent = total > PAGE_ROWS ? `showing ${PAGE_ROWS} of ${total} (filter to narrow)` : `${total} rows`;
  if (filter && !filter._bound) { filter._bound = true; filter.addEventListener("input", () => fillTable(table, columns, rows, opts)); }
}

function plot(id, data, layout) {
  const node = document.getElementById(id);
  if (!node) return;
  Plotly.react(node, data, Object.assign({margin: {t: 40, l: 60, r: 20, b: 60}}, layout), {displaylogo: false, responsive: true});
}

function incidentRows(incs) {
  return incs.map(i => [
    {text: i.id, href: "/console/incidents/" + encodeURIComponent(i.id)},
    i.category, i.root_cause.kind + " " + i.root_cause.id,
    {text: i.state, cls: i.state},
    {text: i.start, sort: i.start}, {text: fmt(i.confidence, 2), sort: i.confidence},
    {text: fmt(i.impact.gpus, 0), sort: i.impact.gpus},
    {text: fmt(i.impact.lost_cost, 2), sort: i.impact.lost_cost ?? -1},
  ]);
}
const INCIDENT_COLS = ["id", "category", "root cause", "state", "start (UTC)", "confidence", "GPUs", "lost ($)"];

function mttd(incs) {
  const d = incs.filter(i => i.detected_at && i.start).map(i => (Date.parse(i.detected_at) - Date.parse(i.start)) / 1000);
  return d.length ? d.reduce((a, b) => a + b, 0) / d.length : null;
}

const pages = {
  async overview() {
    const [inc, led] = await Promise.all([getJSON("/api/v1/incidents"), getJSON("/api/v1/ledger")]);
    const open = inc.incidents.filter(i => i.state === "open");
    let gpuS = 0, goodS = 0, cost = 0, pflop = 0;
    for (const j of led.jobs) {
      const w = (j.gpus || 0) * ((Date.parse(j.end) - Date.parse(j.start)) / 1000 || 0);
      if (j.goodput !== null && j.goodput !== undefined) { gpuS += w; goodS += w * j.goodput; }
      if (j.cost) cost += j.cost;
      if (j.effective_pflop) pflop += j.effective_pflop;
    }
    document.getElementById("card-effective").textContent = gpuS ? fmt(100 * goodS / gpuS, 1) : "–";
    document.getElementById("card-cpp").textContent = pflop ? fmt(cost / pflop, 4) : "–";
    document.getElementById("card-lost").textContent = fmt(open.reduce((a, i) => a + (i.impact.lost_cost || 0), 0), 2);
    document.getElementById("card-open").textContent = String(open.length);
    document.getElementById("card-mttd").textContent = fmt(mttd(inc.incidents), 0);
    const counts = {};
    for (const i of open) counts[i.category] = (counts[i.category] || 0) + 1;
    plot("plot-categories", [{type: "bar", x: Object.keys(counts), y: Object.values(counts)}],
         {title: {text: "Open incidents by category"}, yaxis: {title: {text: "incidents (count)"}}});
    fillTable(document.getElementById("incidents"), INCIDENT_COLS, incidentRows(open), {sortCol: 4, sortDir: -1});
  },
  async incidents() {
    const [inc, svc] = await Promise.all([getJSON("/api/v1/incidents"), getJSON("/api/v1/service")]);
    fillTable(document.getElementById("incidents"), INCIDENT_COLS, incidentRows(inc.incidents), {sortCol: 4, sortDir: -1});
    const last = svc.analysis.last_now;            // the analysis' clock (the data's time for a database)
    const now = last ? new Date(last * 1000).toISOString() : new Date().toISOString();
    plot("plot-timeline", [{type: "scatter", mode: "lines+markers",
      x: inc.incidents.flatMap(i => [i.start, i.end || now, null]),
      y: inc.incidents.flatMap(i => [i.id, i.id, null])}],
      {title: {text: "Incidents over time"}, xaxis: {title: {text: "time (UTC)"}}, yaxis: {title: {text: "incident"}}});
  },
  async incident() {
    const id = document.body.dataset.incident;
    const i = await getJSON("/api/v1/incidents/" + encodeURIComponent(id));
    const d = document.getElementById("detail");
    d.replaceChildren();
    const dl = el("dl");
    const facts = [["category", i.category], ["root cause", i.root_cause.kind + " " + i.root_cause.id],
      ["state", i.state], ["start", i.start], ["detected at", i.detected_at], ["end", i.end],
      ["confidence", fmt(i.confidence, 2)], ["alerts (suppressed)", `${i.alerts} (${i.suppressed})`],
      ["jobs", i.impact.jobs.join(", ")], ["GPUs", i.impact.gpus],
      ["lost GPU-hours", fmt(i.impact.lost_gpu_hours, 2)], ["lost ($)", fmt(i.impact.lost_cost, 2)]];
    for (const [k, v] of facts) { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", fmt(v))); }
    d.appendChild(dl);
    const ev = document.getElementById("evidence");
    ev.replaceChildren(...i.evidence.map(e => el("li", e)));
    fillTable(document.getElementById("actions"), ["action", "target", "status"],
              i.actions.map(a => [a.action, a.target, a.status]));
    const marks = [["start", i.start], ["detected", i.detected_at], ...i.history.map(h => [h.change, h.at])];
    if (i.end) marks.push(["end", i.end]);
    plot("plot-incident", [{type: "scatter", mode: "markers+text", x: marks.map(m => m[1]),
      y: marks.map(() => 1), text: marks.map(m => m[0]), textposition: "top center"}],
      {title: {text: "Timeline"}, xaxis: {title: {text: "time (UTC)"}}, yaxis: {visible: false}});
  },
  async ledger() {
    const led = await getJSON("/api/v1/ledger");
    fillTable(document.getElementById("ledger"),
      ["job", "MFU (%)", "goodput (%)", "GPUs", "$ / effective PFLOP", "cost ($)", "forecast finish"],
      led.jobs.map(j => [j.id, {text: fmt(j.mfu * 100, 1), sort: j.mfu}, {text: fmt(j.goodput * 100, 1), sort: j.goodput},
        j.gpus, {text: fmt(j.cost_per_effective_pflop, 4), sort: j.cost_per_effective_pflop},
        {text: fmt(j.cost, 2), sort: j.cost}, j.forecast ? j.forecast.finish : "–"]));
    const phases = ["compute", "communication", "data_loading", "checkpoint", "failures", "other"];
    plot("plot-split", phases.map(p => ({type: "bar", name: p, x: led.jobs.map(j => j.id),
      y: led.jobs.map(j => 100 * ((j.time_split || {})[p] || 0))})),
      {barmode: "stack", title: {text: "Time split"}, yaxis: {title: {text: "share of time (%)"}}});
    plot("plot-mfu", led.jobs.map(j => {
      const pts = j.mfu_over_time || [];
      return {type: "scatter", mode: "lines", name: j.id, x: pts.map(p => p.t ?? p[0]), y: pts.map(p => 100 * (p.mfu ?? p[1]))};
    }), {title: {text: "MFU over time"}, xaxis: {title: {text: "time (UTC)"}}, yaxis: {title: {text: "MFU (%)"}}});
  },
  async health() {
    const h = await getJSON("/api/v1/health");
    plot("plot-health", [{type: "histogram", x: h.gpus.map(g => g.health_score), nbinsx: 20}],
         {title: {text: `Health score of ${h.gpus.length} GPUs`}, xaxis: {title: {text: "health score (1 healthy)"}}, yaxis: {title: {text: "GPUs (count)"}}});
    fillTable(document.getElementById("health"), ["GPU", "health score", "P(DBE) in horizon", "horizon (days)", "recommendation"],
      h.gpus.map(g => [g.id, {text: fmt(g.health_score, 3), sort: g.health_score}, {text: fmt(g.probability, 4), sort: g.probability},
        g.horizon_days, g.recommendation]), {sortCol: 2, sortDir: -1});
  },
  async runbook() {},
};

async function refresh() {
  const page = document.body.dataset.page;
  const status = document.getElementById("status");
  try {
    await pages[page]();
    status.textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    status.textContent = "cannot update: " + e.message;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  refresh();
  if (document.body.dataset.page !== "runbook") setInterval(refresh, POLL_MS);
});
