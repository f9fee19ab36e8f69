// The per-model detail: generic tables read from any Profile (dimensions, scenarios, percentiles,
// every metric, signatures) around the family panels, which read their families' structured fields.
import { biasSection, toxicitySection } from "./classifier.js";
import { groupsSection, worstCaseSection } from "./groups.js";
import { reliabilitySection } from "./reliability.js";
import { segmentsSection } from "./segments.js";
import { summarizationSection } from "./summarization.js";
import {
  absentReason, allMetrics, axisTitle, count, dimName, fmt, h, hasScore, metricText, newestText, notAvailable, num, pendingText, rateText,
  taskName,
} from "./util.js";

function metricsTable(metrics) {
  return h("table", { id: "all-metrics" },
    h("thead", {}, h("tr", {}, ["family", "metric", "value (95% interval)", "n"].map((t, i) => h("th", { class: i > 1 ? "num" : null }, t)))),
    h("tbody", {}, metrics.map((m) => h("tr", { "data-metric": m.name },
      h("td", {}, m.family), h("td", {}, m.name + (m.lowerIsBetter ? " ↓" : "")),
      h("td", { class: "num" }, metricText(m)), h("td", { class: "num" }, count(m.count))))));
}

function dimensionsSection(p) {
  return [h("h3", {}, "Dimensions"), h("table", {},
    h("thead", {}, h("tr", {}, ["axis", "score", "n", "definition, or why absent"].map((t) => h("th", {}, t)))),
    h("tbody", {}, (p.dimensions ?? []).map((d) => h("tr", { "data-axis": dimName(d) },
      h("td", {}, axisTitle([p], dimName(d))),
      h("td", { class: "num", title: d.lowConfidence ? "low confidence: the sample is small (see the definition)" : null },
        hasScore(d) ? fmt(d.score) + (d.lowConfidence ? " *" : "") : "—"),
      h("td", { class: "num" }, hasScore(d) ? count(d.count) : ""),
      h("td", { class: hasScore(d) ? "" : "absent" }, hasScore(d) ? d.definition || "" : d.absentReason || "")))))];
}

function scenariosSection(p) {
  const scenarios = p.scenarios ?? [];
  if (!scenarios.length) return [h("h3", {}, "Per scenario"), notAvailable("no scenario in this window")];
  const names = [];
  for (const s of scenarios) for (const m of s.metrics ?? []) if (!names.includes(m.name)) names.push(m.name);
  names.sort((a, b) => (a === "accuracy" ? -1 : b === "accuracy" ? 1 : 0));
  return [h("h3", {}, "Per scenario"), h("div", { class: "scroll" }, h("table", { id: "scenarios" },
    h("thead", {}, h("tr", {}, ["scenario", "task", "main metric", "n", ...names].map((t) => h("th", {}, t)))),
    h("tbody", {}, scenarios.map((s) => {
      const by = Object.fromEntries((s.metrics ?? []).map((m) => [m.name, m]));
      const rates = Object.entries(s.sampleRates ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
      const sampled = rates.map(([family, rate]) => `${family} ${rateText(num(rate))}`).join(", ");
      return h("tr", { "data-scenario": s.scenario },
        h("td", {}, s.scenario, sampled ? h("span", { class: "sub sampled" }, ` ${sampled}`) : null), h("td", {}, taskName(s.task)),
        h("td", {}, s.mainMetric || ""), h("td", { class: "num" }, count(s.count)),
        names.map((n) => h("td", { class: "num", title: by[n] ? metricText(by[n]) : "" }, by[n] ? fmt(num(by[n].value), 4) : "—")));
    }))))];
}

// Percentiles are any metric named `<quantity>_p<NN>` (latency_p50, time_to_first_token_p99, ...).
const PCT = /^(.+)_p(\d+)$/;

function percentilesSection(p) {
  const head = h("h3", {}, "Latency percentiles");
  const by = new Map();
  const cols = new Set();
  for (const m of allMetrics(p)) {
    const g = PCT.exec(m.name);
    if (!g) continue;
    if (!by.has(g[1])) by.set(g[1], {});
    by.get(g[1])[g[2]] = m;
    cols.add(g[2]);
  }
  if (!by.size) return [head, notAvailable("no percentiles in this profile", absentReason(p, "efficiency"))];
  const ps = [...cols].sort((a, b) => Number(a) - Number(b));
  return [head, h("table", { id: "percentiles" },
    h("thead", {}, h("tr", {}, h("th", {}, "quantity"), ps.map((c) => h("th", { class: "num" }, `p${c}`)), h("th", { class: "num" }, "n"))),
    h("tbody", {}, [...by].map(([q, row]) => h("tr", { "data-quantity": q }, h("td", {}, q),
      ps.map((c) => h("td", { class: "num", title: row[c] ? metricText(row[c]) : "" }, row[c] ? `${fmt(num(row[c].value), 4)} ${row[c].unit || ""}` : "—")),
      h("td", { class: "num" }, count(Object.values(row)[0].count))))))];
}

function signaturesSection(p) {
  return [h("h3", {}, "Signatures"), h("table", { id: "signatures" },
    h("thead", {}, h("tr", {}, ["family", "version", "options", "model sha256", "signature"].map((t) => h("th", {}, t)))),
    h("tbody", {}, (p.families ?? []).map((f) => {
      const s = f.signature ?? {};
      return h("tr", { "data-family": f.family }, h("td", {}, f.family), h("td", {}, s.version || ""),
        h("td", {}, Object.entries(s.options ?? {}).map(([k, v]) => h("div", {}, `${k}=${v}`))),
        h("td", {}, s.modelSha256 ? h("code", {}, s.modelSha256) : "—"), h("td", {}, h("code", {}, s.text || "")));
    })))];
}

const panel = (id, ...children) => h("div", { class: "panel", id }, ...children);

export function renderDetail(box, p, rerender) {
  if (!p) { box.replaceChildren(h("p", { class: "na" }, "No model yet.")); return; }
  const charts = [];
  const open = new Set([...box.querySelectorAll("details[data-keep]")].filter((d) => d.open).map((d) => d.dataset.keep));
  for (const c of box.querySelectorAll("canvas")) Chart.getChart(c)?.destroy();
  const metrics = allMetrics(p);
  box.replaceChildren(
    h("p", { class: "hint" }, `${p.model}: ${count(p.counts?.windowPredictions)} predictions in the window, ${count(p.counts?.acceptedPredictions)} accepted all time${pendingText(p) ? `; pending (accepted, not yet applied): ${pendingText(p)}` : ""}${!pendingText(p) && newestText(p) ? `; ${newestText(p)}` : ""}${p.window?.retentionNotice ? `; ${p.window.retentionNotice}` : ""}`),
    ...dimensionsSection(p), ...scenariosSection(p),
    h("div", { class: "grid2" }, panel("percentiles-panel", ...percentilesSection(p)), panel("reliability-panel", ...reliabilitySection(p, charts, rerender))),
    panel("groups-panel", ...groupsSection(p)),
    panel("segments-panel", ...segmentsSection(p)),
    h("div", { class: "grid2" }, panel("robustness-panel", ...worstCaseSection(p, "robustness")), panel("fairness-panel", ...worstCaseSection(p, "fairness"))),
    h("div", { class: "grid2" }, panel("toxicity-panel", ...toxicitySection(p)), panel("bias-panel", ...biasSection(p))),
    panel("summarization-panel", ...summarizationSection(p)),
    h("details", { "data-keep": "all-metrics" }, h("summary", {}, `Every family's metrics (${metrics.length})`),
      metrics.length ? metricsTable(metrics) : notAvailable("no metric in this window")),
    ...signaturesSection(p));
  for (const d of box.querySelectorAll("details[data-keep]")) if (open.has(d.dataset.keep)) d.open = true;
  for (const make of charts) make();
}
