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
  // Each result is the gateway's CompareProfiles answer (its canonical JSON): cells with their verdict, test,
  // adjusted p and interval, and the decision over every radar axis.
  const row = (c, multiplicity) => {
    const verdict = VERDICTS[c.verdict] ?? "";
    const direction = verdict === "better" || verdict === "worse" ? verdict : "";
    return h("tr", { class: [c.matters ? "matters" : "", direction].join(" ").trim(), "data-name": c.name, "data-verdict": verdict },
      h("td", {}, c.name), h("td", { class: "num" }, fmt(c.before, 4)), h("td", { class: "num" }, fmt(c.after, 4)),
      h("td", { class: "num delta" }, c.difference === undefined ? "" : (c.difference > 0 ? "+" : "") + fmt(c.difference, 4)),
      // adjusted over every cell tested; the test, its interval and the cell's own p on hover
      h("td", { class: "num p", title: c.pAdjusted === undefined ? "" : `${c.test}; difference 95% ${fmt(c.lower, 4)} to ${fmt(c.upper, 4)}; p ${Number(c.p).toPrecision(2)}; ${multiplicity}-adjusted` },
        c.pAdjusted === undefined ? "" : Number(c.pAdjusted).toPrecision(2)),
      h("td", { class: "verdict" }, verdict),
      h("td", {}, c.why ?? ""));
  };
  const table = (cells, multiplicity) => h("table", {},
    h("thead", {}, h("tr", {}, ["", "before", "now", "change", `p (${multiplicity})`, "verdict", "why"].map((t) => h("th", {}, t)))),
    h("tbody", {}, cells.map((c) => row(c, multiplicity))));
  box.replaceChildren(...results.map(({ model, cells = [], error, before, decision, summary, multiplicity = "Holm" }) => {
    if (error) return h("p", { class: "problem" }, `${model}: ${error}`);
    const matters = cells.filter((c) => c.matters).length;
    const prevN = num(before?.counts?.windowPredictions);
    // The axes, and whatever matters or was found better or worse; the rest one click away.
    const shown = cells.filter((c) => c.kind === "dimension" || c.matters || ["VERDICT_BETTER", "VERDICT_WORSE"].includes(c.verdict));
    const rest = cells.filter((c) => !shown.includes(c));
    return h("div", { class: "compare-model", "data-model": model, "data-decision": DECISIONS[decision] ?? "" },
      h("h3", {}, `${model}: ${matters} change${matters === 1 ? "" : "s"} that matter (previous window: ${count(prevN)} predictions)`),
      summary ? h("p", { class: `decision ${DECISIONS[decision] ?? ""}` }, summary) : null,
      cells.length ? table(shown, multiplicity) : h("p", { class: "na" }, "Nothing to compare: no data in one of the two windows."),
      rest.length ? h("details", {}, h("summary", {}, `${rest.length} more metrics that moved less`), table(rest, multiplicity)) : null);
  }));
}
const VERDICTS = {
  VERDICT_BETTER: "better", VERDICT_WORSE: "worse", VERDICT_NO_SIGNIFICANT_CHANGE: "no significant change",
  VERDICT_NOT_ENOUGH_DATA: "not enough data", VERDICT_NO_DIRECTION: "no direction", VERDICT_ONE_SIDED: "one-sided",
  VERDICT_CHANGED: "changed",
};
const DECISIONS = { DECISION_PASS: "pass", DECISION_WORSE: "worse", DECISION_NOT_ENOUGH_DATA: "not-enough-data" };
