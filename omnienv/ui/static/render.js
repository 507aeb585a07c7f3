// Shared rendering for both pages: DOM building, content blocks (text and images), tool calls.

/** Build an element: el("div", {class: "x", onclick: fn}, child, "text", ...). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** Content blocks in either spelling: ours (mime_type) or MCP's (mimeType). */
export function renderBlocks(blocks) {
  const box = el("div", { class: "blocks" });
  for (const block of blocks || []) {
    if (block && block.type === "image") {
      const mime = block.mime_type || block.mimeType || "image/png";
      const img = el("img", {
        class: "shot", alt: "image from the environment", src: `data:${mime};base64,${block.data}`,
        title: "click to zoom",
      });
      img.addEventListener("click", () => img.classList.toggle("zoomed"));
      box.append(img);
    } else if (block && block.type === "text") {
      box.append(el("pre", { class: "text" }, block.text));
    } else {
      box.append(el("pre", { class: "text" }, JSON.stringify(block)));
    }
  }
  return box;
}

export function formatValue(value) {
  return typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value ?? null);
}

/** guess(word="crane") */
export function formatCall(name, args) {
  const parts = Object.entries(args || {}).map(([key, value]) => `${key}=${formatValue(value)}`);
  return `${name}(${parts.join(", ")})`;
}

export function formatReward(value) {
  if (typeof value !== "number" || Number.isNaN(value)) return "–";
  return Number.isInteger(value) ? value.toFixed(1) : String(Math.round(value * 10000) / 10000);
}

/** A collapsed JSON view, or nothing for an empty value. */
export function jsonDetails(label, value, open = false) {
  if (value === undefined || value === null) return null;
  if (typeof value === "object" && Object.keys(value).length === 0) return null;
  return el("details", { class: "json", open },
    el("summary", {}, label), el("pre", {}, JSON.stringify(value, null, 2)));
}

/** Small coloured labels: done, truncated, error, failure. */
export function badge(text, kind) {
  return el("span", { class: `badge ${kind || ""}` }, text);
}
