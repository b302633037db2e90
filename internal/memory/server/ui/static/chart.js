// Inline SVG charts for token savings. No library: a few rects, lines and labels.

import { fmtNum, s } from "./dom.js";

/**
 * barChart draws labelled horizontal bars: rows = [{label, value, cls, title}].
 * The width follows the container (viewBox scaling).
 */
export function barChart(rows, { width = 560, rowHeight = 30, labelWidth = 170, title = "" } = {}) {
  const max = Math.max(1, ...rows.map((r) => r.value || 0));
  const height = rows.length * rowHeight + 8;
  const barMax = width - labelWidth - 90;
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, preserveAspectRatio: "xMinYMin meet" });
  if (title) svg.appendChild(s("title", {}, title));
  rows.forEach((r, i) => {
    const y = i * rowHeight + 4;
    const w = Math.max(r.value > 0 ? 2 : 0, Math.round(((r.value || 0) / max) * barMax));
    const g = s("g", { class: `bar ${r.cls || ""}` });
    if (r.title) g.appendChild(s("title", {}, r.title));
    g.appendChild(s("text", { x: labelWidth - 10, y: y + rowHeight / 2, "text-anchor": "end", "dominant-baseline": "middle", class: "label" }, r.label));
    g.appendChild(s("rect", { x: labelWidth, y: y + 5, width: barMax, height: rowHeight - 12, rx: 4, class: "track" }));
    g.appendChild(s("rect", { x: labelWidth, y: y + 5, width: w, height: rowHeight - 12, rx: 4, class: "fill" }));
    g.appendChild(s("text", { x: labelWidth + w + 8, y: y + rowHeight / 2, "dominant-baseline": "middle", class: "value" }, fmtNum(r.value)));
    svg.appendChild(g);
  });
  return svg;
}

/**
 * lineChart draws cumulative series over a shared x (index) axis:
 * series = [{name, cls, points: [number]}]; xs = labels for the first and last point.
 */
export function lineChart(series, { width = 560, height = 180, title = "", xLabels = ["", ""] } = {}) {
  const pad = { l: 56, r: 12, t: 12, b: 26 };
  const n = Math.max(...series.map((x) => x.points.length), 1);
  const max = Math.max(1, ...series.flatMap((x) => x.points));
  const X = (i) => pad.l + (n === 1 ? (width - pad.l - pad.r) / 2 : (i / (n - 1)) * (width - pad.l - pad.r));
  const Y = (v) => pad.t + (1 - v / max) * (height - pad.t - pad.b);
  const svg = s("svg", { class: "chart line", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, preserveAspectRatio: "xMinYMin meet" });
  if (title) svg.appendChild(s("title", {}, title));
  for (const frac of [0, 0.5, 1]) {
    const y = Y(max * frac);
    svg.appendChild(s("line", { x1: pad.l, x2: width - pad.r, y1: y, y2: y, class: "grid" }));
    svg.appendChild(s("text", { x: pad.l - 6, y, "text-anchor": "end", "dominant-baseline": "middle", class: "axis" }, fmtNum(Math.round(max * frac))));
  }
  svg.appendChild(s("text", { x: pad.l, y: height - 6, class: "axis" }, xLabels[0]));
  svg.appendChild(s("text", { x: width - pad.r, y: height - 6, "text-anchor": "end", class: "axis" }, xLabels[1]));
  for (const ser of series) {
    if (!ser.points.length) continue;
    const d = ser.points.map((v, i) => `${i ? "L" : "M"}${X(i).toFixed(1)},${Y(v).toFixed(1)}`).join(" ");
    const g = s("g", { class: `series ${ser.cls || ""}` }, s("title", {}, ser.name));
    g.appendChild(s("path", { d, class: "stroke" }));
    ser.points.forEach((v, i) => g.appendChild(s("circle", { cx: X(i), cy: Y(v), r: n > 40 ? 0 : 3, class: "dot" })));
    svg.appendChild(g);
  }
  return svg;
}
