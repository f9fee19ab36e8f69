// Fairness across groups (`Profile.groups`) and the worst case over perturbations (robustness and
// fairness family reports: `<perturbation>_before / _perturbed / _worst`).
import { absentReason, byName, count, dimension, family, fmt, h, intervalText, notAvailable, num, valueCell } from "./util.js";

function groupTable(b, minCount) {
  const values = [...(b.values ?? [])].sort((x, y) => (x.tooFew - y.tooFew) || num(y.metric?.value) - num(x.metric?.value));
  const spread = b.worstValue && b.bestValue && b.worstValue !== b.bestValue;
  const note = (v) => (v.tooFew ? `too few (< ${minCount})` : !spread ? "" : v.value === b.worstValue ? "worst" : v.value === b.bestValue ? "best" : "");
  const summary = !b.worstValue
    ? `no value has ${minCount} predictions yet: no gap`
    : !spread ? `only ${b.worstValue} has enough predictions: no gap`
      : `max gap ${fmt(num(b.maxGap), 4)} (best ${b.bestValue}, worst ${b.worstValue})`
        + (b.worstToBestRatio !== undefined ? `, worst/best ${fmt(num(b.worstToBestRatio), 4)}` : "");
  return h("div", { class: "group", "data-key": b.key },
    h("h4", {}, `${b.key}: `, h("span", { class: "gap", "data-max-gap": num(b.maxGap) }, summary)),
    h("table", { class: "groups" },
      h("thead", {}, h("tr", {}, ["value", "score", "95% interval", "n", "", ""].map((t, i) => h("th", { class: i && i < 4 ? "num" : null }, t)))),
      h("tbody", {}, values.map((v) => h("tr", { "data-value": v.value, class: [v.tooFew ? "too-few" : "", note(v) === "worst" ? "worst" : note(v) === "best" ? "best" : ""].join(" ").trim() || null },
        h("td", {}, v.value), valueCell(v.metric), h("td", { class: "num" }, intervalText(v.metric, 3)),
        h("td", { class: "num" }, count(v.metric?.count)),
        h("td", { class: "bar" }, h("span", { style: `width:${Math.max(0, Math.min(1, num(v.metric?.value))) * 100}%` })),
        h("td", { class: "note" }, note(v)))))));
}

export function groupsSection(p) {
  const head = h("h3", {}, "Fairness across groups");
  const groups = p.groups ?? [];
  if (!groups.length) {
    const reason = family(p, "fairness") ? "no prediction in this window carries a \"groups\" tag" : absentReason(p, "fairness");
    return [head, notAvailable("no per-group breakdown", reason)];
  }
  const minCount = family(p, "fairness")?.signature?.options?.min_group_count ?? "the minimum";
  return [head,
    h("p", { class: "hint" }, `${groups[0].definition || "score per group value"}; values with fewer than ${minCount} predictions are left out of the gap and the axis.`),
    h("div", { class: "groups-grid" }, groups.map((b) => groupTable(b, minCount)))];
}

const WHAT = /^(.+)_(worst|before|perturbed)$/;

export function worstCaseSection(p, name) {
  const head = h("h3", {}, `${name[0].toUpperCase()}${name.slice(1)}: worst case over perturbations`);
  const f = family(p, name);
  const metrics = byName(f?.metrics);
  const overall = metrics.get(name);
  if (!overall) return [head, notAvailable(`no ${name} worst case`, absentReason(p, name))];
  const perts = new Map();
  for (const m of f.metrics) {
    const g = WHAT.exec(m.name);
    if (g) perts.set(g[1], { ...perts.get(g[1]), [g[2]]: m });
  }
  const instances = num(metrics.get("instances")?.value);
  const out = [head, h("p", { class: "hint" }, `${name} ${fmt(num(overall.value), 4)} (95% ${intervalText(overall, 3)}) over ${count(instances)} instances`
    + `${num(metrics.get("instances_without_original")?.value) ? `, ${count(metrics.get("instances_without_original").value)} without their original` : ""}`)];
  if (name === "fairness") {
    const dim = dimension(p, "fairness");
    const parts = (dim?.metrics ?? []).filter((m) => m.name === "counterfactual_fairness" || m.name.startsWith("worst_group["));
    if (parts.length) out.push(h("p", { class: "hint axis-parts" }, `axis = min(${parts.map((m) => `${m.name} ${fmt(num(m.value), 4)}`).join(", ")}) = ${fmt(dim.score, 4)}`));
  }
  if (!perts.size) return [...out, notAvailable(`no ${name} perturbation in this window`, "every instance counts with its own score")];
  return [...out, h("table", { class: "perturbations" },
    h("thead", {}, h("tr", {}, ["perturbation", "before", "perturbed", "worst", "change", "n"].map((t, i) => h("th", { class: i ? "num" : null }, t)))),
    h("tbody", {}, [...perts].map(([pert, m]) => h("tr", { "data-perturbation": pert },
      h("td", {}, pert), valueCell(m.before), valueCell(m.perturbed), valueCell(m.worst),
      h("td", { class: "num" }, m.before && m.perturbed ? fmt(num(m.perturbed.value) - num(m.before.value), 4) : ""),
      h("td", { class: "num" }, count(m.worst?.count))))))];
}
