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
  if (a !== 0 && (a < 0.001 || a >= 1e5)) return v.toExponential(2);
  return Number(v.toFixed(digits)).toString();
}

export function axisName(kind) {
  return String(kind).replace(/^DIMENSION_KIND_/, "").toLowerCase();
}

export function taskName(task) {
  return task ? String(task).replace(/^TASK_/, "").toLowerCase() : "";
}

export const hasScore = (d) => d && typeof d.score === "number"; // optional field: absent means no data

export function halfWidth(x) {
  return x.interval ? (num(x.interval.upper) - num(x.interval.lower)) / 2 : null;
}

export function metricText(m) {
  const unit = m.unit ? ` ${m.unit}` : "";
  let text = `${fmt(num(m.value), 4)}${unit}`;
  if (m.interval) text += ` (${fmt(num(m.interval.lower), 4)}–${fmt(num(m.interval.upper), 4)})`;
  return text;
}

// Every axis any profile carries, in enum order of first appearance (the server sends all seven).
export function axesOf(profiles) {
  const seen = [];
  for (const p of profiles) for (const d of p.dimensions ?? []) {
    const name = axisName(d.kind);
    if (!seen.includes(name)) seen.push(name);
  }
  return seen;
}

export function dimension(profile, axis) {
  return (profile?.dimensions ?? []).find((d) => axisName(d.kind) === axis);
}

export function family(profile, name) {
  return (profile?.families ?? []).find((f) => f.family === name);
}

export function allMetrics(profile) {
  const out = [];
  for (const f of profile?.families ?? []) for (const m of f.metrics ?? []) out.push({ ...m, family: m.family || f.family });
  return out;
}
