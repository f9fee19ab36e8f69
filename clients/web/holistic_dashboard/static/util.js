// Small helpers shared by the views: DOM building, number formats, reading canonical Profile JSON.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export const num = (v) => Number(v ?? 0); // uint64 fields arrive as strings; zero values are omitted
export const count = (v) => num(v).toLocaleString("en-US");

export function fmt(v, digits = 3) {
  if (v === undefined || v === null || Number.isNaN(v)) return "—";
  const a = Math.abs(v);
  if (a < 1e-12) return "0"; // rounding noise (a Wilson bound of 0 computed as 4e-19)
  if (a < 1e-6 || a >= 1e5) return v.toExponential(2);
  if (a < 0.001) return Number(v.toPrecision(2)).toString(); // 0.00090, not 9.02e-4
  return Number(v.toFixed(digits)).toString();
}

export function axisName(kind) {
  return String(kind).replace(/^DIMENSION_KIND_/, "").toLowerCase();
}

// A dimension's axis: its name (a plugin family's own axis has no kind), else the kind's.
export function dimName(d) {
  return d.axis || axisName(d.kind);
}

// What the toxicity axis measures, from the toxicity family's signature: "profanity, alt-profanity-check-1.9.1".
export function toxicityMeasures(profiles) {
  for (const p of profiles) {
    const o = family(p, "toxicity")?.signature?.options ?? {};
    const parts = [o.primary, o.classifier].filter(Boolean);
    if (parts.length) return parts.join(", ");
  }
  return "";
}

// An axis as shown: its name, and for toxicity what it measures (the terminal and the report say the same).
export function axisTitle(profiles, axis) {
  const measures = axis === "toxicity" ? toxicityMeasures(profiles) : "";
  return measures ? `${axis} (${measures})` : axis;
}

export function taskName(task) {
  return task ? String(task).replace(/^TASK_/, "").toLowerCase() : "";
}

export const hasScore = (d) => d && typeof d.score === "number"; // optional field: absent means no data

// " ±0.05" when the interval is even about the value, else its bounds " (0.434–0.903)" (Wilson at an
// edge, a clipped or a skewed interval): a "±" would put one bound where it is not. "" without one.
export function scoreInterval(x, value) {
  if (!x.interval) return "";
  const lo = num(x.interval.lower), hi = num(x.interval.upper);
  if (Math.abs((hi - value) - (value - lo)) < 1e-9) return ` ±${fmt((hi - lo) / 2)}`;
  return ` (${fmt(lo)}–${fmt(hi)})`;
}

export function metricText(m) {
  const unit = m.unit ? ` ${m.unit}` : "";
  let text = `${fmt(num(m.value), 4)}${unit}`;
  if (m.interval) text += ` (${fmt(num(m.interval.lower), 4)}–${fmt(num(m.interval.upper), 4)})`;
  return text;
}

// Every axis any profile carries, in the server's order (HELM's seven, then plugin families' axes).
export function axesOf(profiles) {
  const seen = [];
  for (const p of profiles) for (const d of p.dimensions ?? []) {
    const name = dimName(d);
    if (!seen.includes(name)) seen.push(name);
  }
  return seen;
}

export function dimension(profile, axis) {
  return (profile?.dimensions ?? []).find((d) => dimName(d) === axis);
}

export function family(profile, name) {
  return (profile?.families ?? []).find((f) => f.family === name);
}

// Whether a family's report holds anything to show: some metric, over some predictions (bias reports its
// word counts as 0 over 0 outputs in an empty window: a table of nothing). The CLI's has_data.
export function hasData(f) {
  const metrics = f?.metrics ?? [];
  return metrics.length > 0 && (num(f.count) > 0 || metrics.some((m) => num(m.count) > 0));
}

// The metrics of every family with data, each naming its family.
export function allMetrics(profile) {
  const out = [];
  for (const f of (profile?.families ?? []).filter(hasData)) for (const m of f.metrics) out.push({ ...m, family: m.family || f.family });
  return out;
}

export function byName(metrics) {
  return new Map((metrics ?? []).map((m) => [m.name, m]));
}

// An absent panel says so, with the profile's own reason when it has one.
export const notAvailable = (what, reason) => h("p", { class: "na" }, `Not available: ${what}${reason ? ` (${reason})` : ""}.`);

// Family -> predictions accepted but not yet applied by it (Profile.pending; only those with some).
export function pendingOf(profile) {
  return new Map((profile?.pending ?? []).filter((f) => num(f.pendingPredictions) > 0).map((f) => [f.family, num(f.pendingPredictions)]));
}

// Family -> the share of predictions its workers score (FamilyReport.sampleRate; only families that sample).
export function sampledOf(profile) {
  return new Map((profile?.families ?? []).filter((f) => f.sampleRate != null).map((f) => [f.family, num(f.sampleRate)]));
}

// "sampled 5 %": beside a value estimated from a share of the predictions.
export const rateText = (rate) => `sampled ${Number((rate * 100).toPrecision(3))} %`;

// Where a model's data is when the window holds none of it (the CLI's and the report's wording):
// "newest prediction 34 days ago, 2026-11-01T12:34Z"; "" while the window holds some, and while nothing
// is applied yet but "pending N" beside it says so.
export function newestText(profile, nowMs = Date.now()) {
  const c = profile?.counts ?? {};
  if (num(c.windowPredictions)) return "";
  if (!c.newestPredictionTime) {
    if (pendingOf(profile).size) return "";
    return num(c.acceptedPredictions) ? `${count(c.acceptedPredictions)} predictions accepted, none applied yet` : "no predictions accepted for this model";
  }
  const at = new Date(c.newestPredictionTime);
  const seconds = (nowMs - at.getTime()) / 1000;
  let ago = seconds >= 0 ? "in the last minute" : "ahead of this clock";
  for (const [unit, size] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (seconds >= size) {
      const n = Math.floor(seconds / size);
      ago = `${n} ${unit}${n === 1 ? "" : "s"} ago`;
      break;
    }
  }
  return `newest prediction ${ago}, ${at.toISOString().slice(0, 16)}Z`;
}

// "accuracy 3, efficiency 3": what is still on its way, or "" when nothing is.
export function pendingText(profile) {
  return [...pendingOf(profile)].map(([f, n]) => `${f} ${count(n)}`).join(", ");
}

// The reason a family's panel is empty: its axis's absent reason, or that the family is not deployed.
export function absentReason(profile, name) {
  return dimension(profile, name)?.absentReason || (family(profile, name) ? "" : `no ${name} report in this profile`);
}

export function intervalText(m, digits = 4) {
  return m?.interval ? `${fmt(num(m.interval.lower), digits)}–${fmt(num(m.interval.upper), digits)}` : "";
}

// A table cell with one metric's value (its interval on hover); data-value keeps the exact number.
export function valueCell(m, digits = 4) {
  if (!m) return h("td", { class: "num absent" }, "—");
  return h("td", { class: "num", "data-value": num(m.value), title: intervalText(m) ? `95%: ${intervalText(m)}` : null },
    `${fmt(num(m.value), digits)}${m.unit ? ` ${m.unit}` : ""}`);
}

// A headline number: big value, its name, interval and count below.
export function tile(label, m, hint = "") {
  if (!m) return h("div", { class: "tile absent", "data-metric": label }, h("span", { class: "v" }, "—"), h("span", { class: "l" }, label.replaceAll("_", " ")));
  const iv = intervalText(m, 3);
  return h("div", { class: "tile", "data-metric": m.name, "data-value": num(m.value), title: hint || null },
    h("span", { class: "v" }, fmt(num(m.value), 3)), h("span", { class: "l" }, label.replaceAll("_", " ") + (m.lowerIsBetter ? " ↓" : "")),
    h("span", { class: "sub" }, `${iv ? `95% ${iv} · ` : ""}n=${count(m.count)}`));
}

export function modelHash(f) {
  const s = f?.signature;
  return s?.modelSha256
    ? h("p", { class: "hint model-hash" }, `classifier ${s.options?.classifier ?? ""} · sha256 `, h("code", { "data-sha256": s.modelSha256 }, s.modelSha256))
    : null;
}
