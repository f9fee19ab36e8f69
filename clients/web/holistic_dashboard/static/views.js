// The matrix of models × dimensions, the window comparison and the per-model detail panels.
// Everything is read generically from the Profile message: new families, axes and metrics show
// up without changes here.
import {
  allMetrics, axesOf, axisName, count, dimension, family, fmt, h, halfWidth, hasScore, metricText, num, taskName,
} from "./util.js";

// --- matrix -------------------------------------------------------------------------------------
function sortValue(p, key) {
  if (key === "model") return p.model;
  if (key === "predictions") return num(p.counts?.windowPredictions);
  const d = dimension(p, key);
  return hasScore(d) ? d.score : -Infinity; // absent sorts below every score
}

export function renderMatrix(table, profiles, state, onSort, onPick) {
  const axes = axesOf(profiles);
  const { key, dir } = state.sort;
  const rows = [...profiles].sort((a, b) => {
    const x = sortValue(a, key), y = sortValue(b, key);
    return (x < y ? -1 : x > y ? 1 : a.model < b.model ? -1 : 1) * dir;
  });
  const th = (k, label, cls) => h("th", {
    class: cls, "data-key": k, "aria-sort": key === k ? (dir > 0 ? "ascending" : "descending") : null,
    onclick: () => onSort(k),
  }, label);
  const head = h("tr", {}, th("model", "model"), th("predictions", "predictions", "num"), axes.map((a) => th(a, a, "num")));
  const body = rows.map((p) => h("tr", { "data-model": p.model, class: state.selected.has(p.model) ? "selected" : null },
    h("td", {}, h("a", { href: "#detail-panel", class: "model", onclick: () => onPick(p.model) }, p.model)),
    h("td", { class: "num", "data-col": "predictions" }, count(p.counts?.windowPredictions)),
    axes.map((a) => cell(dimension(p, a), a))));
  table.replaceChildren(h("thead", {}, head), h("tbody", {}, body));
}

function cell(d, axis) {
  if (!hasScore(d)) {
    return h("td", { class: "num absent", "data-col": axis, title: d?.absentReason || "no data" }, "—");
  }
  const hw = halfWidth(d);
  return h("td", { class: "num", "data-col": axis, title: d.definition || "" },
    `${fmt(d.score)}${hw !== null ? ` ±${fmt(hw)}` : ""}${d.lowConfidence ? " *" : ""}`,
    h("span", { class: "sub" }, `n=${count(d.count)}`));
}

// --- comparison ---------------------------------------------------------------------------------
export function renderCompare(box, results, window) {
  if (window === "all") {
    box.replaceChildren(h("p", { class: "na" }, "Pick a window (15 minutes … 7 days) to compare it with the one before it."));
    return;
  }
  if (results.length === 0) {
    box.replaceChildren(h("p", { class: "na" }, "Tick a model to compare its window with the one before it."));
    return;
  }
  const row = (c) => h("tr", {
    class: [c.matters ? "matters" : "", c.better === true ? "better" : c.better === false ? "worse" : ""].join(" ").trim(),
    "data-name": c.name,
  },
    h("td", {}, c.name), h("td", { class: "num" }, fmt(c.before, 4)), h("td", { class: "num" }, fmt(c.after, 4)),
    h("td", { class: "num delta" }, c.delta === null ? "" : (c.delta > 0 ? "+" : "") + fmt(c.delta, 4)),
    h("td", {}, c.matters ? (c.better === false ? "worse: " : c.better === true ? "better: " : "") + c.why : c.why));
  const table = (changes) => h("table", {},
    h("thead", {}, h("tr", {}, ["", "before", "now", "change", "why"].map((t) => h("th", {}, t)))), h("tbody", {}, changes.map(row)));
  box.replaceChildren(...results.map(({ model, changes, error, previous }) => {
    if (error) return h("p", { class: "problem" }, `${model}: ${error}`);
    const matters = changes.filter((c) => c.matters).length;
    const prevN = num(previous?.counts?.windowPredictions);
    // The axes always; raw metrics only where they matter, the rest one click away.
    const shown = changes.filter((c) => c.kind === "dimension" || c.matters);
    const rest = changes.filter((c) => !shown.includes(c));
    return h("div", { class: "compare-model", "data-model": model },
      h("h3", {}, `${model}: ${matters} change${matters === 1 ? "" : "s"} that matter (previous window: ${count(prevN)} predictions)`),
      changes.length ? table(shown) : h("p", { class: "na" }, "Nothing to compare: no data in one of the two windows."),
      rest.length ? h("details", {}, h("summary", {}, `${rest.length} more metrics that moved less`), table(rest)) : null);
  }));
}

// --- detail -------------------------------------------------------------------------------------
const notAvailable = (what, reason) => h("p", { class: "na" }, `Not available yet: ${what}${reason ? ` (${reason})` : ""}.`);

function metricsTable(metrics, withFamily = false) {
  return h("table", {},
    h("thead", {}, h("tr", {}, withFamily ? h("th", {}, "family") : null, h("th", {}, "metric"), h("th", { class: "num" }, "value (95% interval)"), h("th", { class: "num" }, "n"))),
    h("tbody", {}, metrics.map((m) => h("tr", { "data-metric": m.name },
      withFamily ? h("td", {}, m.family) : null, h("td", {}, m.name + (m.lowerIsBetter ? " ↓" : "")),
      h("td", { class: "num" }, metricText(m)), h("td", { class: "num" }, count(m.count))))));
}

function dimensionsSection(p) {
  return [h("h3", {}, "Dimensions"), h("table", {},
    h("thead", {}, h("tr", {}, ["axis", "score", "n", "definition, or why absent"].map((t) => h("th", {}, t)))),
    h("tbody", {}, (p.dimensions ?? []).map((d) => h("tr", { "data-axis": axisName(d.kind) },
      h("td", {}, axisName(d.kind)), h("td", { class: "num" }, hasScore(d) ? fmt(d.score) : "—"),
      h("td", { class: "num" }, hasScore(d) ? count(d.count) : ""),
      h("td", { class: hasScore(d) ? "" : "absent" }, hasScore(d) ? d.definition || "" : d.absentReason || "")))))];
}

function scenariosSection(p) {
  const scenarios = p.scenarios ?? [];
  if (!scenarios.length) return [h("h3", {}, "Scenarios"), notAvailable("no scenario in this window")];
  const names = [];
  for (const s of scenarios) for (const m of s.metrics ?? []) if (!names.includes(m.name)) names.push(m.name);
  names.sort((a, b) => (a === "accuracy" ? -1 : b === "accuracy" ? 1 : 0));
  return [h("h3", {}, "Per scenario"), h("table", { id: "scenarios" },
    h("thead", {}, h("tr", {}, ["scenario", "task", "main metric", "n", ...names].map((t) => h("th", {}, t)))),
    h("tbody", {}, scenarios.map((s) => {
      const by = Object.fromEntries((s.metrics ?? []).map((m) => [m.name, m]));
      return h("tr", { "data-scenario": s.scenario }, h("td", {}, s.scenario), h("td", {}, taskName(s.task)),
        h("td", {}, s.mainMetric || ""), h("td", { class: "num" }, count(s.count)),
        names.map((n) => h("td", { class: "num", title: by[n] ? metricText(by[n]) : "" }, by[n] ? fmt(num(by[n].value), 4) : "—")));
    })))];
}

// Per-group values are metrics named `<metric>[<group key>=<group value>]` (e.g. accuracy[dialect=aae]).
const GROUP = /^(.+)\[([^\]=]+)=([^\]]+)\]$/;

function groupsSection(p) {
  const rows = allMetrics(p).map((m) => ({ m, g: GROUP.exec(m.name) })).filter((x) => x.g);
  const head = h("h3", {}, "Per group");
  if (!rows.length) return [head, notAvailable("no per-group metrics in this profile", dimension(p, "fairness")?.absentReason)];
  return [head, h("table", { id: "groups" },
    h("thead", {}, h("tr", {}, ["group", "value", "metric", "result", "n"].map((t) => h("th", {}, t)))),
    h("tbody", {}, rows.map(({ m, g }) => h("tr", {}, h("td", {}, g[2]), h("td", {}, g[3]), h("td", {}, `${m.family}/${g[1]}`),
      h("td", { class: "num" }, metricText(m)), h("td", { class: "num" }, count(m.count))))))];
}

// Reliability points are calibration metrics named `reliability[<bin's mean confidence>]`, valued
// by the observed accuracy in the bin; drawn against the diagonal of perfect calibration.
const BIN = /^reliability\[([0-9.]+)\]$/;

function reliabilitySection(p, charts) {
  const head = h("h3", {}, "Reliability curve");
  const cal = family(p, "calibration");
  const points = (cal?.metrics ?? []).map((m) => ({ m, b: BIN.exec(m.name) })).filter((x) => x.b)
    .map(({ m, b }) => ({ x: Number(b[1]), y: num(m.value) })).sort((a, b) => a.x - b.x);
  if (!points.length) return [head, notAvailable("no reliability bins in this profile", dimension(p, "calibration")?.absentReason)];
  const canvas = h("canvas", { id: "reliability", width: 360, height: 260 });
  charts.push(() => new Chart(canvas, {
    type: "scatter",
    data: { datasets: [
      { label: "observed", data: points, showLine: true, borderColor: "#0072B2", backgroundColor: "#0072B2" },
      { label: "perfect calibration", data: [{ x: 0, y: 0 }, { x: 1, y: 1 }], showLine: true, borderDash: [4, 4], borderColor: "#9ca3af", pointRadius: 0 },
    ] },
    options: { animation: false, scales: { x: { min: 0, max: 1, title: { display: true, text: "confidence" } }, y: { min: 0, max: 1, title: { display: true, text: "accuracy" } } } },
  }));
  return [head, canvas];
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
  if (!by.size) return [head, notAvailable("no percentiles in this profile", dimension(p, "efficiency")?.absentReason)];
  const ps = [...cols].sort((a, b) => Number(a) - Number(b));
  return [head, h("table", { id: "percentiles" },
    h("thead", {}, h("tr", {}, h("th", {}, "quantity"), ps.map((c) => h("th", { class: "num" }, `p${c}`)), h("th", { class: "num" }, "n"))),
    h("tbody", {}, [...by].map(([q, row]) => h("tr", { "data-quantity": q }, h("td", {}, q),
      ps.map((c) => h("td", { class: "num", title: row[c] ? metricText(row[c]) : "" }, row[c] ? `${fmt(num(row[c].value), 4)} ${row[c].unit || ""}` : "—")),
      h("td", { class: "num" }, count(Object.values(row)[0].count))))))];
}

function familySection(p, name, title) {
  const head = h("h3", {}, title);
  const f = family(p, name);
  if (!f) return [head, notAvailable(`no ${name} report in this profile`, dimension(p, name)?.absentReason)];
  return [head, h("p", { class: "hint" }, `${count(f.count)} predictions${num(f.skipped) ? `, ${count(f.skipped)} skipped (${f.skippedReason})` : ""}`),
    metricsTable(f.metrics ?? [])];
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

export function renderDetail(box, p) {
  if (!p) { box.replaceChildren(h("p", { class: "na" }, "No model yet.")); return; }
  const charts = [];
  for (const c of box.querySelectorAll("canvas")) Chart.getChart(c)?.destroy();
  box.replaceChildren(
    h("p", { class: "hint" }, `${p.model}: ${count(p.counts?.windowPredictions)} predictions in the window, ${count(p.counts?.acceptedPredictions)} accepted all time`),
    ...dimensionsSection(p), ...scenariosSection(p),
    h("div", { class: "grid2" }, h("div", {}, ...percentilesSection(p)), h("div", {}, ...reliabilitySection(p, charts))),
    ...groupsSection(p),
    h("div", { class: "grid2" }, h("div", {}, ...familySection(p, "toxicity", "Toxicity")), h("div", {}, ...familySection(p, "bias", "Bias"))),
    h("h3", {}, "Every family's metrics"), metricsTable(allMetrics(p), true),
    ...signaturesSection(p));
  for (const make of charts) make();
}
