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

// A table paged, sorted and filtered by the server (the API's lists: ?offset&limit&sort&desc&q),
// for lists that grow with the cluster (10,240 GPUs). columns: [[title, row key or null], ...];
// cells(row) gives the cells in column order.
const SERVER_ROWS = 100;
async function serverTable(table, columns, cells) {
  const st = table._srv || (table._srv = {offset: 0, sort: table.dataset.sort || null, desc: table.dataset.desc === "true"});
  const filter = document.getElementById("filter");
  const q = filter ? filter.value.trim() : "";
  const args = new URLSearchParams({offset: st.offset, limit: SERVER_ROWS, q: q, desc: st.desc});
  if (st.sort) args.set("sort", st.sort);
  const page = await getJSON(table.dataset.source + "?" + args);
  if (page.total && st.offset >= page.total) { st.offset = 0; return serverTable(table, columns, cells); }
  const hr = table.tHead.insertRow();
  table.tHead.replaceChildren(hr);
  columns.forEach(([title, key]) => {
    const th = el("th", title + (key && key === st.sort ? (st.desc ? " ▼" : " ▲") : ""));
    if (key) th.addEventListener("click", () => {
      st.desc = st.sort === key ? !st.desc : false; st.sort = key; st.offset = 0; serverTable(table, columns, cells);
    });
    hr.appendChild(th);
  });
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const row of page.rows) {
    const tr = body.insertRow();
    for (const c of cells(row)) { const td = tr.insertCell(); td.textContent = fmt(c); }
  }
  const more = document.getElementById(table.id + "-more");
  if (more) more.textContent = page.total ? `${page.offset + 1}–${page.offset + page.rows.length} of ${page.total}` : "none";
  const prev = document.getElementById(table.id + "-prev"), next = document.getElementById(table.id + "-next");
  if (prev && !prev._bound) {
    prev._bound = next._bound = true;
    prev.addEventListener("click", () => { st.offset = Math.max(0, st.offset - SERVER_ROWS); serverTable(table, columns, cells); });
    next.addEventListener("click", () => { if (st.offset + SERVER_ROWS < (table._total || 0)) { st.offset += SERVER_ROWS; serverTable(table, columns, cells); } });
  }
  table._total = page.total;
  if (filter && !filter._srvBound) { filter._srvBound = true; filter.addEventListener("input", () => { st.offset = 0; serverTable(table, columns, cells); }); }
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
  async jobs() {
    const led = await getJSON("/api/v1/jobs?limit=1000");
    const jobs = led.rows;
    fillTable(document.getElementById("jobs"),
      ["job", "MFU (%)", "goodput (%)", "GPUs", "$ / effective PFLOP", "cost ($)", "forecast finish (p10 – p90)"],
      jobs.map(j => [j.id, {text: fmt(j.mfu * 100, 1), sort: j.mfu}, {text: fmt(j.goodput * 100, 1), sort: j.goodput},
        j.gpus, {text: fmt(j.cost_per_effective_pflop, 4), sort: j.cost_per_effective_pflop},
        {text: fmt(j.cost, 2), sort: j.cost},
        j.forecast ? `${j.forecast.finish} (${j.forecast.finish_p10} – ${j.forecast.finish_p90})` : "–"]));
    plot("plot-mfu", jobs.map(j => {
      const pts = j.mfu_over_time || [];
      return {type: "scatter", mode: "lines", name: j.id, x: pts.map(p => p[0]), y: pts.map(p => 100 * p[1])};
    }), {title: {text: "MFU over time"}, xaxis: {title: {text: "time (UTC)"}}, yaxis: {title: {text: "MFU (%)"}}});
    plot("plot-goodput", [{type: "bar", x: jobs.map(j => j.id), y: jobs.map(j => 100 * (j.goodput ?? 0)), name: "goodput"}],
      {title: {text: "Goodput over the window"}, yaxis: {title: {text: "productive share of GPU time (%)"}, range: [0, 100]}});
    const phases = ["compute", "communication", "data_loading", "checkpoint", "failures", "other"];
    plot("plot-split", phases.map(p => ({type: "bar", name: p, x: jobs.map(j => j.id),
      y: jobs.map(j => 100 * ((j.time_split || {})[p] || 0))})),
      {barmode: "stack", title: {text: "Time split"}, yaxis: {title: {text: "share of time (%)"}}});
    const fc = jobs.filter(j => j.forecast);
    plot("plot-forecast", [{type: "scatter", mode: "markers", name: "finish (p50)", y: fc.map(j => j.id),
      x: fc.map(j => j.forecast.finish)},
      {type: "scatter", mode: "lines", name: "p10 – p90", y: fc.flatMap(j => [j.id, j.id, null]),
       x: fc.flatMap(j => [j.forecast.finish_p10, j.forecast.finish_p90, null])}],
      {title: {text: "Forecast finish, with its p10 – p90 band"}, xaxis: {title: {text: "finish time (UTC)"}},
       yaxis: {title: {text: "job"}}});
  },
  async health() {
    const [racks, ov] = await Promise.all([getJSON("/api/v1/gpus/racks?limit=1000"), getJSON("/api/v1/overrides")]);
    const r = racks.rows;
    plot("plot-racks", [
      {type: "bar", name: "GPUs at risk", x: r.map(x => x.rack), y: r.map(x => x.at_risk)},
      {type: "scatter", mode: "markers", name: "lowest health score", x: r.map(x => x.rack), y: r.map(x => x.min_health_score), yaxis: "y2"}],
      {title: {text: `Health by rack (${r.reduce((a, x) => a + x.gpus, 0)} GPUs)`}, yaxis: {title: {text: "GPUs at risk (count)"}},
       yaxis2: {title: {text: "health score (1 healthy)"}, overlaying: "y", side: "right", range: [0, 1]},
       legend: {orientation: "h", y: -0.25}});
    await serverTable(document.getElementById("gpus"),
      [["GPU", "id"], ["rack", "rack"], ["health score", "health_score"], ["P(DBE) in horizon", "probability"],
       ["horizon (days)", "horizon_days"], ["recommendation", "recommendation"]],
      g => [g.id, g.rack, g.health_score, g.probability, g.horizon_days, g.recommendation]);
    fillTable(document.getElementById("overrides"), ["GPU", "state", "reason", "who", "at"],
      ov.overrides.map(o => [o.gpu_id, o.state, o.reason, o.who, o.when]));
  },
  async fabric() {
    const f = await getJSON("/api/v1/fabric");
    // the colours of `diagnose --heatmap`: log2(latency / baseline), 0 (as usual) green to 2 (4x) red
    const z = f.ratio.map(row => row.map(v => (v === null || v <= 0) ? null : Math.log2(v)));
    plot("plot-heatmap", [{type: "heatmap", x: f.labels, y: f.labels, z: z, colorscale: "RdYlGn", reversescale: true,
      zmin: 0, zmax: 2, customdata: f.ratio, hovertemplate: "%{y} → %{x}: %{customdata:.2f}× baseline<extra></extra>",
      colorbar: {title: {text: "log2(latency / baseline)"}}, hoverongaps: false}],
      {title: {text: `One-way latency ratio by ${f.by || "node"} (rows: source, columns: destination)`},
       xaxis: {title: {text: "destination"}, type: "category"}, yaxis: {title: {text: "source"}, type: "category", autorange: "reversed"}});
    document.getElementById("notes").replaceChildren(...f.notes.map(n => el("li", n)));
    await serverTable(document.getElementById("ports"),
      [["port / NIC", "id"], ["kind", "kind"], ["CRC error ratio", "crc_ratio"], ["pre-FEC BER", "pre_fec_ber"],
       ["RDMA retransmits (/s)", "rdma_retransmits_per_s"], ["symbol errors (/s)", "symbol_errors_per_s"]],
      p => [p.id, p.kind, p.crc_ratio, p.pre_fec_ber, p.rdma_retransmits_per_s, p.symbol_errors_per_s]);
  },
  async rules() {
    const [rules, alerts, acts] = await Promise.all([getJSON("/api/v1/rules?limit=1000"),
      getJSON("/api/v1/rules/alerts?limit=1000"), getJSON("/api/v1/actions?limit=1000")]);
    document.getElementById("rules-source").textContent = "rule file: " + rules.source;
    fillTable(document.getElementById("rules"), ["rule", "scope", "category", "severity", "for (s)", "pending", "firing", "resolved", "actions", "written at"],
      rules.rows.map(r => [r.name, r.scope, r.category ?? "–", r.severity, r.for_s, r.pending, r.firing, r.resolved,
        r.actions.join(", "), r.source]), {sortCol: 6, sortDir: -1});
    const states = ["pending", "firing", "resolved"];
    plot("plot-alerts", states.map(st => ({type: "bar", name: st, x: rules.rows.filter(r => r.pending + r.firing + r.resolved).map(r => r.name),
      y: rules.rows.filter(r => r.pending + r.firing + r.resolved).map(r => r[st])})),
      {barmode: "stack", title: {text: "Alerts by rule and state"}, yaxis: {title: {text: "alerts (count)"}}});
    fillTable(document.getElementById("alerts"), ["alert", "entity", "state", "active at (UTC)", "fired at (UTC)", "value"],
      alerts.rows.map(a => [a.name, a.entity.kind + " " + a.entity.id, {text: a.state, cls: a.state === "firing" ? "open" : ""},
        a.active_at, a.fired_at ?? "–", {text: fmt(a.value, 4) + (a.unit ? " " + a.unit : ""), sort: a.value ?? -1}]), {sortCol: 3, sortDir: -1});
    document.getElementById("actions-mode").textContent = `mode: ${acts.mode ?? "none"}` +
      (acts.audit_log ? `; audit log ${acts.audit_log} (${acts.audit.length} latest records)` : "; no audit log file (a dry run)");
    fillTable(document.getElementById("actions"), ["time (UTC)", "rule", "action", "target", "decision", "detail"],
      [...acts.rows, ...acts.audit].map(a => [a.time ?? "–", a.rule ?? "–", a.action ?? a.event ?? "–", a.target ?? "–",
        a.decision ?? a.event ?? "–", a.detail ?? ""]), {sortCol: 0, sortDir: -1});
  },
  async check() {
    const c = await getJSON("/api/v1/check");
    const axes = Object.entries(c.maturity);
    const cards = document.getElementById("maturity");
    cards.replaceChildren(...axes.map(([k, m]) => {
      const d = el("div", null, "card");
      d.append(el("div", k, "label"), el("div", `${m.level} / 5`, "value"), el("div", m.reason, "unit"));
      return d;
    }));
    plot("plot-maturity", [{type: "bar", x: axes.map(a => a[0]), y: axes.map(a => a[1].level)}],
      {title: {text: "Maturity by axis"}, yaxis: {title: {text: "level (1 – 5)"}, range: [0, 5]}});
    const probs = document.getElementById("problems");
    probs.replaceChildren(...(c.problems.length ? c.problems.map(p => el("li", p)) : [el("li", "no problem found", "resolved")]));
    fillTable(document.getElementById("counts"), ["what", "count"], Object.entries(c.counts).map(([k, v]) => [k, {text: fmt(v, 0), sort: v}]));
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
