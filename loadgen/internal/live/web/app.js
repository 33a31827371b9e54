// The live view: polls /api/state once a second and draws it. No framework:
// the DOM of index.html, filled in place; the charts are uPlot's.
"use strict";

const $ = (id) => document.getElementById(id);
const num = (v, digits) => (v == null ? "–" : v.toFixed(digits));
const ms = (s) => (s == null || s <= 0 ? "–" : (s * 1000).toPrecision(3) + " ms");
const cores = (v) => (v == null ? "–" : v.toFixed(2) + " cores");
const secs = (s) => Math.max(0, Math.round(s)) + " s";

function chart(el, title, series) {
  const opts = {
    title: title, width: 420, height: 200,
    scales: { x: { time: true } },
    series: [{}].concat(series.map((s) => ({ label: s[0], stroke: s[1], width: 1.5, spanGaps: false }))),
  };
  return new uPlot(opts, [[]].concat(series.map(() => [])), el);
}

const charts = {
  rps: chart($("chart-rps"), "req/s", [["req/s", "#1565c0"]]),
  lat: chart($("chart-lat"), "latency (ms)", [["p50", "#2e7d32"], ["p99", "#c62828"]]),
  cpu: chart($("chart-cpu"), "CPU (cores)", [["proxy", "#6a1b9a"], ["loadgen", "#ef6c00"]]),
};

function draw(st) {
  $("run").textContent = st.run;
  const status = $("status");
  status.textContent = {
    running: "running", interrupting: "interrupted (Ctrl-C): finishing the current cell",
    done: "done", interrupted: "interrupted: finished cells kept", failed: "ended: results could not be written",
  }[st.status] || st.status;
  status.dataset.status = st.status;
  const finished = st.cells.filter((c) => c.status !== "planned" && c.status !== "running").length;
  const elapsed = (Date.parse(st.now) - Date.parse(st.started)) / 1000;
  $("progress").textContent = finished + " of " + st.cells.length + " cells finished, " + secs(elapsed) +
    " elapsed (the plan takes at least " + secs(st.estimate_s) + ")";

  const cur = st.current;
  $("cell").textContent = cur ? "[" + cur.n + "/" + cur.of + "] " + cur.id : "none (between cells)";
  $("cell").dataset.id = cur ? cur.id : "";
  if (cur) {
    const el = (Date.parse(st.now) - Date.parse(cur.started)) / 1000;
    $("phase").textContent = (el < cur.warmup_s ? "warm-up, " : "window, ") + secs(el) + " of " + secs(cur.warmup_s + cur.window_s);
  } else {
    $("phase").textContent = "";
  }

  const src = $("source");
  src.dataset.source = st.source || "";
  src.className = st.source === "loadgen" ? "warn" : "";
  src.textContent = st.source === "prometheus" ? "From Prometheus (" + st.prom_url + "), the recording rules Grafana shows."
    : st.source === "loadgen" ? "Prometheus is away (" + st.prom_url + ": " + (st.prom_error || "no answer") + "): the loadgen's own counters."
    : "";

  const p = cur && st.live && st.live.cell === cur.id ? st.live : null;
  const rps = $("rps");
  rps.textContent = p && p.rps != null ? num(p.rps, 0) : "–";
  rps.dataset.value = p && p.rps != null ? String(p.rps) : "";
  rps.dataset.t = p ? String(p.t) : "";
  $("p50").textContent = p ? ms(p.p50_s) : "–";
  $("p99").textContent = p ? ms(p.p99_s) : "–";
  $("errors").textContent = !p ? "–" : p.err_rps != null ? num(p.err_rps, 1) + " /s" : p.errors != null ? p.errors + " in the cell" : "–";
  $("proxy_cpu").textContent = p ? (p.proxy_cpu == null && p.source === "loadgen" ? "– (needs Prometheus)" : cores(p.proxy_cpu)) : "–";
  $("loadgen_cpu").textContent = p ? cores(p.loadgen_cpu) : "–";

  const h = st.history;
  const col = (f) => h.map((x) => (x[f] == null ? null : x[f]));
  const t = h.map((x) => x.t);
  charts.rps.setData([t, col("rps")]);
  charts.lat.setData([t, col("p50_s").map((v) => (v == null ? null : v * 1000)), col("p99_s").map((v) => (v == null ? null : v * 1000))]);
  charts.cpu.setData([t, col("proxy_cpu"), col("loadgen_cpu")]);

  const body = $("cells").tBodies[0];
  body.textContent = "";
  for (const c of st.cells) {
    const tr = body.insertRow();
    tr.dataset.id = c.id;
    tr.dataset.status = c.status;
    const ran = c.status === "ok" || c.status === "failed" || c.status === "aborted";
    const cells = [c.n, c.id, c.load, c.status, ran ? num(c.rps, 0) : "", ran ? ms(c.p50_s) : "", ran ? ms(c.p99_s) : "",
      ran ? String(c.errors) : "", [c.reason, c.disturbed ? "disturbed: " + c.disturbed : ""].filter(Boolean).join("; ")];
    for (const v of cells) tr.insertCell().textContent = v;
  }

  const rep = st.report;
  $("report").hidden = !rep;
  if (rep) {
    $("manifest").textContent = rep.manifest;
    $("report-link").textContent = rep.html;
    $("report-link").href = "file://" + rep.html;
    $("report-cmd").textContent = rep.command;
  }
}

let ended = false;
async function poll() {
  try {
    const r = await fetch("api/state", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const st = await r.json();
    $("gone").hidden = true;
    ended = st.report != null;
    draw(st);
  } catch (e) {
    $("gone").hidden = false; // the page keeps the last state it drew
  }
  setTimeout(poll, ended ? 5000 : 1000);
}
poll();
