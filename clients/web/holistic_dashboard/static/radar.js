// The radar overlay of the selected models (Chart.js, vendored). An absent score is null: the
// outline breaks there (spanGaps off) and is never drawn at 0; an axis no model has is marked.
import { axesOf, axisTitle, dimension, hasScore } from "./util.js";

const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];

const LABEL_CHARS = 18;

// `text` as lines of at most `width` characters, broken at spaces or after hyphens (a longer piece is cut).
export function wrapWords(text, width) {
  const lines = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    word.match(/[^-]*-|[^-]+$/g).forEach((part, k) => {
      for (let p = part; p.length; p = p.slice(width)) {
        const piece = p.slice(0, width);
        const sep = k === 0 && p === part && line ? " " : "";
        if (line && (line + sep + piece).length <= width) line += sep + piece;
        else {
          if (line) lines.push(line);
          line = piece;
        }
      }
    });
  }
  if (line) lines.push(line);
  return lines.length ? lines : [""];
}

// Chart.js sizes the circle for its labels in one pass that shrinks the radius by at most half, so on a
// narrow canvas long labels still run off it. Fit again from the shrunk circle until every label box
// (Chart.js's own, `_pointLabelItems` in the vendored 4.6.1) lies inside the scale's box.
export function fitLabels(scale, rounds = 8) {
  const outside = () => scale._pointLabelItems.some((it) =>
    it.left < scale.left || it.right > scale.right || it.top < scale.top || it.bottom > scale.bottom);
  for (let k = 0; k < rounds && outside(); k++) scale.fit();
}

export function radarData(profiles) {
  const axes = axesOf(profiles);
  const datasets = profiles.map((p, i) => {
    const data = axes.map((a) => (hasScore(dimension(p, a)) ? dimension(p, a).score : null));
    const colour = COLOURS[i % COLOURS.length];
    return {
      label: p.model, data, spanGaps: false, borderColor: colour, backgroundColor: colour + "22",
      pointBackgroundColor: colour, fill: data.every((v) => v !== null), borderWidth: 2,
    };
  });
  const noData = axes.map((_, i) => datasets.length > 0 && datasets.every((d) => d.data[i] === null));
  return { axes, datasets, noData };
}

export class Radar {
  constructor(canvas) {
    this.canvas = canvas;
    this.noData = [];
    this.profiles = [];
    this.chart = new Chart(canvas, {
      type: "radar",
      data: { labels: [], datasets: [] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        scales: {
          r: {
            min: 0, max: 1, ticks: { stepSize: 0.25, backdropColor: "transparent", callback: (v) => String(v) },
            afterFit: fitLabels,
            pointLabels: {
              font: { size: 13 },
              color: (ctx) => (this.noData[ctx.index] ? "#9ca3af" : "#1d2433"),
              // lines Chart.js measures when it sizes the circle: a long name (a plugin's axis, the
              // toxicity classifier) wraps instead of running off the canvas
              callback: (label, i) => {
                const lines = wrapWords(axisTitle(this.profiles, label), LABEL_CHARS);
                return this.noData[i] ? [...lines, "(no data)"] : lines;
              },
            },
          },
        },
        plugins: { legend: { position: "bottom" } },
      },
    });
  }

  show(profiles) {
    const { axes, datasets, noData } = radarData(profiles);
    this.noData = noData;
    this.profiles = profiles;
    this.chart.data.labels = axes;
    this.chart.data.datasets = datasets;
    this.chart.update("none");
    this.canvas.dataset.axes = axes.join(",");
    this.canvas.dataset.models = profiles.map((p) => p.model).join(",");
  }
}
