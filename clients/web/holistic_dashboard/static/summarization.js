// The summarization family's block: overlap with the references, extractiveness against the source,
// and the semantic-similarity proxy, each with why it is absent (`absentMetrics`) when it is.
import { byName, count, family, h, intervalText, notAvailable, num, valueCell } from "./util.js";

const ROWS = [
  ["rouge_1", "ROUGE-1 F (vs reference)"], ["rouge_2", "ROUGE-2 F (vs reference)"], ["rouge_l", "ROUGE-L F (vs reference)"],
  ["bleu", "BLEU, corpus (0–100)"], ["chrf", "chrF, corpus (0–100)"],
  ["coverage", "coverage (share of words copied from the source)"], ["density", "density (Σ copied fragment length² / summary words)"],
  ["compression", "compression (source words per summary word)"],
  ["semantic_similarity_reference", "semantic similarity to the reference"], ["semantic_similarity_source", "semantic similarity to the source"],
  ["semantic_truncated_share", "texts truncated for the embedding model"],
];

export function summarizationSection(p) {
  const head = h("h3", {}, "Summarization");
  const f = family(p, "summarization");
  if (!f) return [head, notAvailable("no summarization report", "the summarization family is not deployed")];
  const m = byName(f.metrics);
  const absent = f.absentMetrics ?? {};
  if (!(f.metrics ?? []).length) return [head, notAvailable("no summary scored in this window", f.skippedReason)];
  const summaries = num(f.count) - num(f.skipped);
  const row = (name, label) => {
    const x = m.get(name);
    if (!x && !absent[name]) return null;
    return h("tr", { "data-metric": name }, h("td", {}, label), h("td", {}, h("code", {}, name)),
      x ? valueCell(x) : h("td", { class: "num absent" }, "—"),
      h("td", { class: x ? "num" : "absent" }, x ? intervalText(x, 3) : `not available: ${absent[name]}`),
      h("td", { class: "num" }, x ? count(x.count) : ""));
  };
  const pr = ["rouge_1", "rouge_2", "rouge_l"].flatMap((t) => ["precision", "recall"].map((w) => m.get(`${t}_${w}`))).filter(Boolean);
  return [head,
    h("p", { class: "hint" }, `${count(summaries)} summaries${num(f.skipped) ? `; ${count(f.skipped)} skipped (${f.skippedReason})` : ""}; means over scenarios, BLEU and chrF over all summaries`),
    h("table", { id: "summarization", class: "compact" },
      h("thead", {}, h("tr", {}, ["", "metric", "value", "95% interval", "n"].map((t, i) => h("th", { class: i === 2 || i === 4 ? "num" : null }, t)))),
      h("tbody", {}, ROWS.map(([name, label]) => row(name, label)))),
    pr.length ? h("details", { "data-keep": "rouge-pr" }, h("summary", {}, "ROUGE precision and recall"),
      h("table", {}, h("tbody", {}, pr.map((x) => h("tr", { "data-metric": x.name }, h("td", {}, x.name), valueCell(x), h("td", { class: "num" }, intervalText(x, 3))))))) : null];
}
