// The matrix of models × dimensions and the window comparison (the per-model detail is detail.js).
// Everything is read generically from the Profile message: new families, axes and metrics show
// up without changes here.
import { axesOf, axisTitle, count, dimension, fmt, h, hasScore, newestText, num, pendingOf, rateText, sampledOf, scoreInterval } from "./util.js";

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
  const head = h("tr", {}, th("model", "model"), th("predictions", "predictions", "num"), axes.map((a) => th(a, axisTitle(profiles, a), "num")));
  const body = rows.map((p) => h("tr", { "data-model": p.model, class: state.selected.has(p.model) ? "selected" : null },
    h("td", {}, h("a", { href: "#detail-panel", class: "model", onclick: () => onPick(p.model) }, p.model)),
    predictionsCell(p), axes.map((a) => cell(dimension(p, a), a, pendingOf(p), sampledOf(p)))));
  table.replaceChildren(h("thead", {}, head), h("tbody", {}, body));
}

// The window's predictions, the most any family has accepted but not yet applied, and a part of the window
// past the tenant's retention (the CLIs' "retention:" line).
function predictionsCell(p) {
  const most = Math.max(0, ...pendingOf(p).values());
  const where = most ? "" : newestText(p); // an empty window says where the data is (pending says it already)
  const notice = p.window?.retentionNotice;
  return h("td", { class: "num", "data-col": "predictions" }, count(p.counts?.windowPredictions),
    most ? h("span", { class: "sub pending" }, `pending ${count(most)}`) : null,
    where ? h("span", { class: "sub newest" }, where) : null,
    notice ? h("span", { class: "sub retention", title: notice }, "part past retention") : null);
}

function cell(d, axis, pending, sampled) {
  if (!hasScore(d)) {
    const n = pending.get(d?.family);
    return h("td", { class: "num absent", "data-col": axis, title: d?.absentReason || "no data" }, n ? `pending ${count(n)}` : "—");
  }
  return h("td", { class: "num", "data-col": axis, title: d.definition || "" },
    `${fmt(d.score)}${scoreInterval(d, num(d.score))}${d.lowConfidence ? " *" : ""}`,
    h("span", { class: "sub" }, `n=${count(d.count)}`),
    sampled.has(d.family) ? h("span", { class: "sub sampled" }, rateText(sampled.get(d.family))) : null);
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
    // the cell's test, Holm-adjusted over the comparison (holistic_client/significance.py), its interval on hover
    h("td", { class: "num p", title: c.p_holm == null ? "" : `${c.method}; difference 95% ${fmt(c.diff_lower, 4)} to ${fmt(c.diff_upper, 4)}; p ${Number(c.p).toPrecision(2)}` },
      c.p_holm == null ? "" : Number(c.p_holm).toPrecision(2)),
    h("td", {}, c.matters ? (c.better === false ? "worse: " : c.better === true ? "better: " : "") + c.why : c.why));
  const table = (changes) => h("table", {},
    h("thead", {}, h("tr", {}, ["", "before", "now", "change", "p (Holm)", "why"].map((t) => h("th", {}, t)))), h("tbody", {}, changes.map(row)));
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
