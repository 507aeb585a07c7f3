// Small SVG charts for the summary page, with no library: bar charts (histograms) and line charts.
// Every label is set as text (textContent), never as markup, so a string from the file stays a
// string. Sizes are in viewBox units; the SVG scales to its card's width. Colours come from CSS.

const SVG = "http://www.w3.org/2000/svg";

/** Build an SVG element: svg("rect", {x: 1, class: "bar"}, child...). Text children become text nodes. */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A short number for an axis or a label: 3 significant digits, no trailing zeros. */
export function short(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  if (value !== 0 && (Math.abs(value) >= 1e5 || Math.abs(value) < 1e-3)) return value.toExponential(1);
  return String(Number(value.toPrecision(3)));
}

/** About `count` round tick values within [low, high]: 1, 2 or 5 times a power of ten apart, whichever
 * gives the count nearest the one asked for (on a log scale). Ticks are counted, never summed: at
 * 1e17 a step of 5 is below the spacing of floats, so `value += step` would never reach `high`. */
export function ticks(low, high, count = 5) {
  if (!Number.isFinite(low) || !Number.isFinite(high)) return [];
  if (!(high > low)) return [low];
  const raw = (high - low) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const ratio = raw / power; // in [1, 10)
  const step = power * (ratio >= Math.sqrt(50) ? 10 : ratio >= Math.sqrt(10) ? 5 : ratio >= Math.sqrt(2) ? 2 : 1);
  const first = Math.ceil(low / step) * step;
  if (!Number.isFinite(first) || first + step === first) return [low, high]; // steps too fine to tell apart
  const out = [];
  for (let k = 0; k <= count * 3; k++) {
    const value = first + k * step;
    if (value > high + step * 1e-9) break;
    out.push(Number(value.toPrecision(12)));
  }
  return out;
}

function frame(width, height, margin, label) {
  return svg("svg", {
    viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": label,
    preserveAspectRatio: "xMidYMid meet", "data-margin": margin.join(" "),
  }, svg("title", {}, label));
}

function yAxis(chart, low, high, y, left, right, format = short, count = 4) {
  const group = svg("g", { class: "axis y" });
  for (const value of ticks(low, high, count)) {
    group.append(svg("line", { class: "grid", x1: left, x2: right, y1: y(value), y2: y(value) }));
    group.append(svg("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end" }, format(value)));
  }
  chart.append(group);
}

/**
 * A bar per bin: `bins` are {lo, hi, count}. Bins with lo === hi are single values (labelled under
 * their bar); ranges are labelled at their edges. Each bar's title tells its range and count.
 */
export function barChart(bins, { label, unit = "episodes", width = 640, height = 220 } = {}) {
  const margin = [12, 12, 40, 44]; // top right bottom left
  const [top, right, bottom, left] = margin;
  const chart = frame(width, height, margin, label);
  const most = Math.max(1, ...bins.map((b) => b.count));
  const plot = { w: width - left - right, h: height - top - bottom };
  const y = (value) => top + plot.h - (value / most) * plot.h;
  yAxis(chart, 0, most, y, left, width - right, (v) => (Number.isInteger(v) ? String(v) : ""));
  const band = plot.w / Math.max(1, bins.length);
  const gap = Math.min(4, band * 0.15);
  const single = bins.every((b) => b.lo === b.hi);
  const every = Math.max(1, Math.ceil(bins.length / (single ? 16 : 8)));
  const bars = svg("g", { class: "bars" });
  const labels = svg("g", { class: "axis x" });
  bins.forEach((bin, i) => {
    const x = left + i * band;
    const range = bin.lo === bin.hi ? short(bin.lo) : `${short(bin.lo)}–${short(bin.hi)}`;
    bars.append(svg("rect", {
      class: "bar", x: x + gap / 2, width: Math.max(1, band - gap), y: y(bin.count),
      height: Math.max(0, top + plot.h - y(bin.count)), "data-count": bin.count, "data-lo": bin.lo,
      "data-hi": bin.hi,
    }, svg("title", {}, `${range}: ${bin.count} ${unit}`)));
    if (bin.count > 0 && band >= 18) {
      bars.append(svg("text", { class: "count", x: x + band / 2, y: y(bin.count) - 3, "text-anchor": "middle" },
        String(bin.count)));
    }
    if (i % every === 0 && single) {
      labels.append(svg("text", { x: x + band / 2, y: top + plot.h + 15, "text-anchor": "middle" }, short(bin.lo)));
    } else if (i % every === 0) {
      labels.append(svg("text", { x, y: top + plot.h + 15, "text-anchor": "middle" }, short(bin.lo)));
    }
  });
  if (bins.length && !single) {
    const last = bins[bins.length - 1];
    labels.append(svg("text", { x: left + plot.w, y: top + plot.h + 15, "text-anchor": "middle" }, short(last.hi)));
  }
  labels.append(svg("line", { class: "base", x1: left, x2: width - right, y1: top + plot.h, y2: top + plot.h }));
  labels.append(svg("text", { class: "name", x: left + plot.w / 2, y: height - 6, "text-anchor": "middle" }, label));
  chart.append(bars, labels);
  return chart;
}

/**
 * Lines over a shared x axis: `series` are {points: [[x, y], ...], class, name}. A series of one
 * point is drawn as a dot. Compact charts (small multiples) get fewer ticks and no axis name.
 */
export function lineChart(series, { label, xName = "step", width = 1000, height = 300, compact = false } = {}) {
  const margin = compact ? [8, 8, 22, 40] : [12, 14, 40, 48];
  const [top, right, bottom, left] = margin;
  const chart = frame(width, height, margin, label);
  const all = series.flatMap((s) => s.points);
  if (!all.length) return chart;
  let [xLow, xHigh] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [yLow, yHigh] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (xLow === xHigh) { // widen by an amount the floats can hold at that size (1 is nothing at 1e17)
    const half = Math.max(1, Math.abs(xLow) * 1e-6);
    [xLow, xHigh] = [xLow - half, xHigh + half];
  }
  if (yLow === yHigh) [yLow, yHigh] = [yLow - (Math.abs(yLow) || 1) / 2, yHigh + (Math.abs(yHigh) || 1) / 2];
  const pad = (yHigh - yLow) * 0.05;
  [yLow, yHigh] = [yLow - pad, yHigh + pad];
  const plot = { w: width - left - right, h: height - top - bottom };
  const x = (value) => left + ((value - xLow) / (xHigh - xLow)) * plot.w;
  const y = (value) => top + plot.h - ((value - yLow) / (yHigh - yLow)) * plot.h;
  yAxis(chart, yLow, yHigh, y, left, width - right, short, compact ? 3 : 5);
  const axis = svg("g", { class: "axis x" });
  for (const value of ticks(xLow, xHigh, compact ? 3 : 6)) {
    axis.append(svg("text", { x: x(value), y: top + plot.h + 15, "text-anchor": "middle" }, short(value)));
  }
  axis.append(svg("line", { class: "base", x1: left, x2: width - right, y1: top + plot.h, y2: top + plot.h }));
  if (!compact) {
    axis.append(svg("text", { class: "name", x: left + plot.w / 2, y: height - 6, "text-anchor": "middle" }, xName));
  }
  chart.append(axis);
  for (const line of series) {
    if (line.points.length === 1) {
      const [px, py] = line.points[0];
      chart.append(svg("circle", { class: `dot ${line.class || ""}`, cx: x(px), cy: y(py), r: 3 },
        svg("title", {}, `${line.name || ""} ${xName} ${short(px)}: ${short(py)}`)));
      continue;
    }
    const d = line.points.map(([px, py], i) => `${i ? "L" : "M"}${x(px).toFixed(1)},${y(py).toFixed(1)}`).join("");
    chart.append(svg("path", { class: `line ${line.class || ""}`, d, "data-points": line.points.length },
      svg("title", {}, line.name || label)));
  }
  return chart;
}

/** A legend line: coloured swatches named by each series. */
export function legend(series) {
  return svg("svg", { class: "legend", viewBox: `0 0 ${series.length * 190} 16`, width: series.length * 190, height: 16 },
    series.map((s, i) => svg("g", { transform: `translate(${i * 190},0)` },
      svg("line", { class: `line ${s.class || ""}`, x1: 0, x2: 22, y1: 8, y2: 8 }),
      svg("text", { x: 28, y: 12 }, s.name))));
}
