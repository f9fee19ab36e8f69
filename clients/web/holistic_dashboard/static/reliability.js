// The reliability diagram: the calibration family's `reliabilityCurves`, one per scenario, drawn
// as accuracy against mean confidence per equal-mass bin, beside the diagonal of perfect calibration.
import { absentReason, byName, count, family, fmt, h, notAvailable, num } from "./util.js";

const chosen = new Map(); // model -> the scenario picked in its diagram (kept across live updates)

function binsTable(curve) {
  return h("table", { class: "bins" },
    h("thead", {}, h("tr", {}, ["bin (lower, upper]", "n", "mean confidence", "accuracy", "gap"].map((t, i) => h("th", { class: i ? "num" : null }, t)))),
    h("tbody", {}, curve.bins.map((b) => h("tr", {},
      h("td", {}, `(${fmt(num(b.lower), 4)}, ${fmt(num(b.upper), 4)}]`), h("td", { class: "num" }, count(b.count)),
      h("td", { class: "num" }, fmt(num(b.meanConfidence), 4)), h("td", { class: "num" }, fmt(num(b.accuracy), 4)),
      h("td", { class: "num" }, fmt(num(b.accuracy) - num(b.meanConfidence), 4))))));
}

function chart(canvas, curve) {
  const most = Math.max(...curve.bins.map((b) => num(b.count)), 1);
  const points = curve.bins.map((b) => ({ x: num(b.meanConfidence), y: num(b.accuracy), n: num(b.count), lo: num(b.lower), hi: num(b.upper) }));
  return () => new Chart(canvas, {
    type: "scatter",
    data: { datasets: [
      { label: `observed (${curve.scenario})`, data: points, showLine: true, borderColor: "#0072B2", backgroundColor: "#0072B2", clip: false,
        pointRadius: points.map((pt) => 3 + 5 * Math.sqrt(pt.n / most)) },
      { label: "perfect calibration", data: [{ x: 0, y: 0 }, { x: 1, y: 1 }], showLine: true, borderDash: [4, 4], borderColor: "#9ca3af", pointRadius: 0 },
    ] },
    options: {
      animation: false, responsive: true, maintainAspectRatio: false,
      scales: { x: { min: 0, max: 1, title: { display: true, text: "mean confidence in the bin" } },
        y: { min: 0, max: 1, title: { display: true, text: "accuracy in the bin" } } },
      plugins: { tooltip: { callbacks: { label: (ctx) => (ctx.datasetIndex ? "perfect calibration"
        : `(${fmt(ctx.raw.lo)}, ${fmt(ctx.raw.hi)}]: n=${ctx.raw.n}, confidence ${fmt(ctx.raw.x)}, accuracy ${fmt(ctx.raw.y)}`) } } },
    },
  });
}

export function reliabilitySection(p, charts, rerender) {
  const head = h("h3", {}, "Reliability diagram");
  const curves = (family(p, "calibration")?.reliabilityCurves ?? []).filter((c) => (c.bins ?? []).length);
  if (!curves.length) return [head, notAvailable("no reliability curve in this profile", absentReason(p, "calibration"))];
  const names = curves.map((c) => c.scenario);
  const scenario = names.includes(chosen.get(p.model)) ? chosen.get(p.model) : names[0];
  const curve = curves.find((c) => c.scenario === scenario);
  const scn = byName((p.scenarios ?? []).find((s) => s.scenario === scenario)?.metrics?.filter((m) => m.family === "calibration"));
  const ece = scn.get("ece_10_bin");
  const bound = num(scn.get("ece_10_bin_error_bound")?.value);
  const n = curve.bins.reduce((s, b) => s + num(b.count), 0);
  const picker = h("select", { id: "reliability-scenario", onchange: (e) => { chosen.set(p.model, e.target.value); rerender(); } },
    names.map((s) => h("option", { value: s, selected: s === scenario }, s)));
  const canvas = h("canvas", { id: "reliability", "aria-label": `reliability diagram of ${scenario}`, "data-scenario": scenario, "data-bins": curve.bins.length });
  charts.push(chart(canvas, curve));
  return [head,
    h("p", { class: "hint" }, h("label", {}, "scenario ", picker),
      ` ${count(n)} predictions in ${curve.bins.length} ${curve.binning === "equal_mass" ? "equal-mass " : ""}bins`,
      ece ? `; ece_10_bin ${fmt(num(ece.value), 4)}` : "",
      curve.exact ? " (exact)" : `; bins from the confidence grid (too many distinct confidences), ece error ≤ ${fmt(bound, 4)}`),
    h("div", { class: "chart-box" }, canvas),
    h("details", { "data-keep": "reliability-bins" }, h("summary", {}, "bins"), binsTable(curve))];
}
