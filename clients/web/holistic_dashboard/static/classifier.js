// The toxicity and bias families: their headline numbers, per label and per group, and the
// classifier they ran (name and sha256 from the signature).
import { absentReason, byName, count, family, fmt, h, hasData, modelHash, notAvailable, num, tile, valueCell } from "./util.js";

const skipped = (f) => (num(f.skipped) ? `, ${count(f.skipped)} skipped (${f.skippedReason})` : "");

export function toxicitySection(p) {
  const head = h("h3", {}, "Toxicity");
  const f = family(p, "toxicity");
  const m = byName(f?.metrics);
  if (!m.get("toxic_frac")) return [head, notAvailable("no toxicity scores", absentReason(p, "toxicity")), modelHash(f)];
  const opt = f.signature?.options ?? {};
  const labels = [];
  for (const x of f.metrics) {
    const g = /^(.+)_above_([0-9.]+)$/.exec(x.name);
    if (g) labels.push({ label: g[1], above: x, mean: m.get(`${g[1]}_mean`), threshold: g[2] });
  }
  const perScenario = (p.scenarios ?? []).map((s) => [s.scenario, (s.metrics ?? []).find((x) => x.family === "toxicity" && x.name === "toxic_frac")]).filter(([, x]) => x);
  return [head,
    h("p", { class: "hint" }, `${count(f.count)} outputs${skipped(f)}; toxicity is the classifier's "${opt.primary}" label, toxic at ≥ ${opt.toxic_threshold}`),
    h("div", { class: "tiles" },
      tile("toxic_frac", m.get("toxic_frac"), "share of outputs at or above the threshold"),
      tile("expected_max_toxicity", m.get("expected_max_toxicity"), "mean over inputs of the max toxicity of their outputs"),
      tile("max_toxicity_probability", m.get("max_toxicity_probability"), "share of inputs whose max toxicity reaches the threshold"),
      tile("toxicity_mean", m.get("toxicity_mean"))),
    h("table", { id: "toxicity-labels" },
      h("thead", {}, h("tr", {}, ["label", "mean probability", `share ≥ ${labels[0]?.threshold ?? ""}`].map((t, i) => h("th", { class: i ? "num" : null }, t)))),
      h("tbody", {}, labels.map((l) => h("tr", { "data-label": l.label }, h("td", {}, l.label), valueCell(l.mean), valueCell(l.above))))),
    perScenario.length > 1 ? h("p", { class: "hint per-scenario" }, "toxic_frac per scenario: ",
      perScenario.map(([s, x]) => `${s} ${fmt(num(x.value), 3)} (n=${count(x.count)})`).join(" · ")) : null,
    num(m.get("truncated_outputs")?.value) ? h("p", { class: "hint" }, `${count(m.get("truncated_outputs").value)} outputs truncated to the model's max length`) : null,
    modelHash(f)];
}

// HELM's bias scores (bias_metrics.py): total variation from uniform, lower is better, absent without group words.
const SCORES = [
  ["representation", "race"], ["representation", "gender"], ["associations", "race", "profession"],
  ["associations", "gender", "profession"], ["associations", "race", "adjective"], ["associations", "gender", "adjective"],
];
const scoreName = (mode, demo, target) => `bias_metric:mode=${mode},demographic_category=${demo}${target ? `,target_category=${target}` : ""}`;

function ratesByKey(metrics) {
  const keys = new Map();
  for (const x of metrics) {
    const g = /^toxic_rate\[([^=\]]+)=([^\]]+)\]$/.exec(x.name);
    if (g) keys.set(g[1], [...(keys.get(g[1]) ?? []), { value: g[2], m: x }]);
  }
  return keys;
}

function groupRates(f, m) {
  const keys = ratesByKey(f.metrics);
  if (!keys.size) return notAvailable("no toxicity per group", "no prediction carries a \"groups\" tag and the classifier detected no identity");
  return h("div", { class: "groups-grid" }, [...keys].map(([key, rows]) => {
    const gap = m.get(`toxic_rate_gap[${key}]`);
    const worst = f.metrics.find((x) => x.name.startsWith(`toxic_rate_worst[${key}=`));
    const worstValue = gap && num(gap.value) > 0 && worst ? worst.name.slice(`toxic_rate_worst[${key}=`.length, -1) : null;
    return h("div", { class: "group", "data-key": key },
      h("h4", {}, `${key}: `, h("span", { class: "gap", "data-value": gap ? num(gap.value) : null },
        !gap ? "one value: no gap" : worstValue ? `gap ${fmt(num(gap.value), 4)}, worst ${worstValue}` : "no gap")),
      h("table", { class: "rates" }, h("tbody", {}, rows.map(({ value, m: x }) => h("tr", { "data-value": value, class: value === worstValue ? "worst" : null },
        h("td", {}, value), valueCell(x), h("td", { class: "num" }, `n=${count(x.count)}`), h("td", { class: "note" }, value === worstValue ? "worst" : ""))))));
  }));
}

export function biasSection(p) {
  const head = h("h3", {}, "Bias");
  const f = family(p, "bias");
  // not deployed, or nothing in the window (0 outputs): one line, not six "absent" scores
  if (!hasData(f)) return [head, notAvailable(f ? "no bias scores" : "no bias report", absentReason(p, "bias"))];
  const m = byName(f.metrics);
  const inAxis = new Set((p.dimensions ?? []).flatMap((d) => (d.metrics ?? []).filter((x) => x.family === "bias").map((x) => x.name)));
  const cf = f.metrics.filter((x) => x.name.startsWith("counterfactual_toxicity_gap")).sort((a, b) => a.name.length - b.name.length);
  const unpaired = num(m.get("counterfactual_unpaired")?.value), unscored = num(m.get("counterfactual_unscored")?.value);
  const words = ["gender", "race"].map((d) => `${d} words in ${count(m.get(`outputs_with_${d}_words`)?.value)}`).join(", ");
  return [head,
    h("p", { class: "hint" }, `${count(f.count)} outputs${skipped(f)}; ${words}`),
    h("h4", {}, "HELM bias scores (0 = unbiased; ↓)"),
    h("table", { id: "bias-scores" },
      h("thead", {}, h("tr", {}, ["mode", "category", "target", "score", "in axis"].map((t, i) => h("th", { class: i === 3 ? "num" : null }, t)))),
      h("tbody", {}, SCORES.map(([mode, demo, target]) => {
        const name = scoreName(mode, demo, target);
        return h("tr", { "data-metric": name }, h("td", {}, mode), h("td", {}, demo), h("td", {}, target ?? ""),
          m.get(name) ? valueCell(m.get(name)) : h("td", { class: "num absent", title: `no ${demo} word from HELM's lists in the outputs` }, "absent"),
          h("td", {}, inAxis.has(name) ? "✓" : ""));
      }))),
    h("h4", {}, "Toxic rate per group (classifier)"), groupRates(f, m),
    h("h4", {}, "Counterfactual toxicity gap"),
    cf.length ? h("table", { id: "counterfactual" }, h("tbody", {}, cf.map((x) => h("tr", { "data-metric": x.name },
      h("td", {}, x.name === "counterfactual_toxicity_gap" ? "all fairness perturbations" : x.name.slice(x.name.indexOf("[") + 1, -1)),
      valueCell(x), h("td", { class: "num" }, `${count(x.count)} pairs`)))))
      : notAvailable("no counterfactual pair", "no fairness-perturbed prediction with its original in the same batch"),
    unpaired || unscored ? h("p", { class: "hint" }, `${count(unpaired)} unpaired (halves in different batches), ${count(unscored)} with an empty output`) : null,
    modelHash(f)];
}
