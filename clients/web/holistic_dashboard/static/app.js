// The dashboard's state and wiring: one EventSource for live updates, re-rendering on each event.
import { Radar } from "./radar.js";
import { count, dimName, h, newestText, pendingText } from "./util.js";
import { renderDetail } from "./detail.js";
import { renderCompare, renderMatrix } from "./views.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const state = {
  window: params.get("window") || "24h",
  models: new Map(), // name -> ModelSummary JSON
  profiles: new Map(), // name -> Profile JSON for the current window
  selected: new Set(params.getAll("model")),
  pickedSelection: params.has("model"),
  sort: { key: "model", dir: 1 },
  detail: params.get("detail") || null,
  updates: 0,
  source: null,
  compareTimer: null,
};
const radar = new Radar($("radar"));
$("window").value = state.window;

function selectedProfiles() {
  return [...state.selected].filter((m) => state.profiles.has(m)).sort().map((m) => state.profiles.get(m));
}

function renderModels() {
  const names = [...state.models.keys()].sort();
  $("models").replaceChildren(...names.map((name) => h("li", { "data-model": name },
    h("label", {}, h("input", {
      type: "checkbox", value: name, checked: state.selected.has(name),
      onchange: (e) => { e.target.checked ? state.selected.add(name) : state.selected.delete(name); state.pickedSelection = true; renderAll(); refreshCompare(); },
    }), ` ${name}`, h("span", { class: "n" }, count(state.models.get(name).acceptedPredictions))))));
  const picker = $("detail-model");
  const current = state.detail;
  picker.replaceChildren(...names.map((n) => h("option", { value: n, selected: n === current }, n)));
}

function renderAll() {
  const chosen = selectedProfiles();
  radar.show(chosen);
  $("radar-notes").replaceChildren(...chosen.map((p) => {
    const absent = (p.dimensions ?? []).filter((d) => typeof d.score !== "number").map(dimName);
    return h("li", {}, `${p.model}: ${count(p.counts?.windowPredictions)} predictions` + (absent.length ? `; absent: ${absent.join(", ")}` : "")
      + (pendingText(p) ? `; pending: ${pendingText(p)}` : "") + (newestText(p) ? `; ${newestText(p)}` : "")
      + (p.window?.retentionNotice ? `; ${p.window.retentionNotice}` : ""));
  }));
  renderMatrix($("matrix"), [...state.profiles.values()], state, (key) => {
    state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : key === "model" ? 1 : -1 };
    renderAll();
  }, (model) => { state.detail = model; renderModels(); renderDetailPanel(); });
  renderDetailPanel();
}

function renderDetailPanel() {
  if (!state.detail || !state.models.has(state.detail)) state.detail = [...state.models.keys()].sort()[0] ?? null;
  $("detail-model").value = state.detail ?? "";
  renderDetail($("detail"), state.detail ? state.profiles.get(state.detail) : null, renderDetailPanel);
}

async function refreshCompare() {
  const models = [...state.selected].sort();
  $("compare-title").textContent = state.window === "all" ? "Compare a window with the one before it"
    : `${$("window").selectedOptions[0].textContent} against the one before it`;
  if (state.window === "all" || models.length === 0) { renderCompare($("compare"), [], state.window); return; }
  const results = await Promise.all(models.map(async (model) => {
    try {
      const reply = await fetch(`/api/compare?model=${encodeURIComponent(model)}&window=${state.window}`);
      const body = await reply.json();
      if (!reply.ok) return { model, error: `${body.error.code}: ${body.error.message}` };
      return { model, ...body };
    } catch (err) { // the dashboard itself is unreachable: EventSource shows "reconnecting…"
      return { model, error: `no answer from the dashboard (${err.message})` };
    }
  }));
  renderCompare($("compare"), results, state.window);
  document.body.dataset.compared = String(Number(document.body.dataset.compared || 0) + 1);
}

function scheduleCompare() { // at most one comparison every 3 s while updates stream in
  if (state.compareTimer) return;
  state.compareTimer = setTimeout(() => { state.compareTimer = null; refreshCompare(); }, 3000);
}

function problem(text) {
  $("problem").hidden = !text;
  $("problem").textContent = text || "";
}

function connect() {
  state.source?.close();
  state.profiles.clear();
  const source = new EventSource(`/api/events?window=${state.window}`);
  state.source = source;
  $("status").className = "status connecting";
  $("status").textContent = "connecting…";
  source.onopen = () => { $("status").className = "status live"; $("status").textContent = "live"; };
  source.onerror = () => { $("status").className = "status offline"; $("status").textContent = "reconnecting…"; };
  source.addEventListener("models", (e) => {
    const listed = JSON.parse(e.data);
    state.models = new Map(listed.map((m) => [m.model, m]));
    if (!state.pickedSelection && state.selected.size === 0) listed.slice(0, 3).forEach((m) => state.selected.add(m.model));
    renderModels();
    renderAll();
  });
  source.addEventListener("profile", (e) => {
    const p = JSON.parse(e.data);
    state.profiles.set(p.model, p);
    state.updates += 1;
    document.body.dataset.updates = String(state.updates);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    problem("");
    renderAll();
    if (state.selected.has(p.model)) scheduleCompare();
  });
  source.addEventListener("problem", (e) => {
    const { code, message } = JSON.parse(e.data);
    problem(`The gateway answered ${code}: ${message}` + (code === "UNAUTHENTICATED" ? " (start the dashboard with --token or HOLISTIC_TOKEN)" : ""));
  });
}

$("window").addEventListener("change", (e) => { state.window = e.target.value; connect(); refreshCompare(); });
$("detail-model").addEventListener("change", (e) => { state.detail = e.target.value; renderDetailPanel(); });
connect();
refreshCompare();
window.holistic = { state, radar }; // for tests and the curious
