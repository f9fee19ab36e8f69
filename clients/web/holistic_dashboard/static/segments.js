// Segments (`Profile.segments`): each family's main metric per value of each segment key
// (HOLISTIC_SEGMENT_KEYS), values by count, the `other` cell (values past the first K) last.
import { count, h, intervalText, notAvailable, num, valueCell } from "./util.js";

function segmentTable(key, breakdowns) {
  return h("div", { class: "segment", "data-key": key },
    h("h4", {}, `segment ${key}`),
    h("table", { class: "segments" },
      h("thead", {}, h("tr", {}, ["value", "family", "metric", "value", "95% interval", "n", ""].map((t, i) => h("th", { class: i > 2 && i < 6 ? "num" : null }, t)))),
      h("tbody", {}, breakdowns.flatMap((b) => (b.values ?? []).map((v) => h("tr", { "data-family": b.family, "data-value": v.other ? null : v.value, class: v.other ? "other" : null },
        h("td", {}, v.other ? h("em", {}, "other") : v.value), h("td", {}, b.family), h("td", {}, b.metric + (b.lowerIsBetter ? " ↓" : "")),
        valueCell(v.metric), h("td", { class: "num" }, intervalText(v.metric, 3)), h("td", { class: "num" }, count(v.metric?.count)),
        h("td", { class: "bar" }, b.lowerIsBetter || v.metric?.unit ? "" : h("span", { style: `width:${Math.max(0, Math.min(1, num(v.metric?.value))) * 100}%` }))))))));
}

export function segmentsSection(p) {
  const head = h("h3", {}, "Segments");
  const segments = p.segments ?? [];
  if (!segments.length) return [head, notAvailable("no segment breakdown", "HOLISTIC_SEGMENT_KEYS names no metadata key, or no prediction in this window carries one")];
  const keys = new Map();
  for (const b of segments) keys.set(b.key, [...(keys.get(b.key) ?? []), b]);
  return [head,
    h("p", { class: "hint" }, "each family's main metric per value of a metadata key; other: every value past the key's first HOLISTIC_SEGMENT_TOP_K for this model"),
    h("div", { class: "segments-grid" }, [...keys].map(([key, bs]) => segmentTable(key, bs)))];
}
