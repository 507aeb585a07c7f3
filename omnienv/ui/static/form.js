// Forms from JSON Schemas: one input per property of a tool's parameters, read back as arguments.

import { el } from "./render.js";

/** The schema's main type, seeing through Optional (["string", "null"] or anyOf with null). */
export function mainType(schema) {
  if (!schema || typeof schema !== "object") return "any";
  if (Array.isArray(schema.enum)) return "enum";
  if (Array.isArray(schema.type)) return schema.type.find((t) => t !== "null") || "any";
  if (schema.type) return schema.type;
  for (const key of ["anyOf", "oneOf"]) {
    if (Array.isArray(schema[key])) {
      const branch = schema[key].find((s) => s && s.type !== "null");
      if (branch) return mainType(branch);
    }
  }
  if (schema.const !== undefined) return "enum";
  return "any";
}

function branchOf(schema) {
  for (const key of ["anyOf", "oneOf"]) {
    if (Array.isArray(schema[key])) {
      const branch = schema[key].find((s) => s && s.type !== "null");
      if (branch) return { ...branch, ...schema, [key]: undefined };
    }
  }
  return schema;
}

export class FieldError extends Error {}

function coerce(text, type, name) {
  if (type === "integer") {
    const n = Number(text);
    if (!Number.isInteger(n)) throw new FieldError(`${name}: "${text}" is not an integer`);
    return n;
  }
  if (type === "number") {
    const n = Number(text);
    if (text.trim() === "" || Number.isNaN(n)) throw new FieldError(`${name}: "${text}" is not a number`);
    return n;
  }
  if (type === "boolean") {
    if (/^(true|1|yes)$/i.test(text)) return true;
    if (/^(false|0|no)$/i.test(text)) return false;
    throw new FieldError(`${name}: "${text}" is not true or false`);
  }
  return text;
}

function parseJSON(text, name) {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new FieldError(`${name}: not valid JSON (${error.message})`);
  }
}

/** One field: its element and a reader returning [present, value]. */
function field(name, rawSchema, required, idPrefix) {
  const schema = branchOf(rawSchema || {});
  const type = mainType(rawSchema || {});
  const id = `${idPrefix}-${name}`;
  const hint = schema.description || "";
  const hasDefault = schema.default !== undefined && schema.default !== null;
  let input;
  let read;
  if (type === "enum") {
    const values = Array.isArray(schema.enum) ? schema.enum : [schema.const];
    input = el("select", { id, name });
    if (!required) input.append(el("option", { value: "" }, "(not set)"));
    values.forEach((value, i) => input.append(el("option", { value: String(i) }, formatOption(value))));
    if (hasDefault) input.value = String(values.findIndex((v) => v === schema.default));
    read = () => (input.value === "" ? [false] : [true, values[Number(input.value)]]);
  } else if (type === "boolean") {
    input = el("input", { id, name, type: "checkbox" });
    input.checked = schema.default === true;
    read = () => [required || input.checked !== (schema.default === true), input.checked];
  } else if (type === "integer" || type === "number") {
    input = el("input", {
      id, name, type: "number", step: type === "integer" ? "1" : "any",
      min: schema.minimum, max: schema.maximum, placeholder: type,
    });
    if (hasDefault) input.value = String(schema.default);
    read = () => (input.value === "" ? [false] : [true, coerce(input.value, type, name)]);
  } else if (type === "array") {
    const itemType = mainType(schema.items || {});
    const scalar = ["string", "integer", "number", "boolean"].includes(itemType);
    const placeholder = scalar
      ? (itemType === "string" ? "one item per line, or a JSON list" : "e.g. 100, 200 (or a JSON list)")
      : "a JSON list";
    input = el("textarea", { id, name, rows: itemType === "string" ? 3 : 1, placeholder });
    if (hasDefault) input.value = JSON.stringify(schema.default);
    read = () => {
      const text = input.value.trim();
      if (text === "") return [false];
      if (text.startsWith("[") || !scalar) {
        const value = parseJSON(text, name);
        if (!Array.isArray(value)) throw new FieldError(`${name}: expected a list`);
        return [true, value];
      }
      const parts = itemType === "string" ? text.split("\n") : text.split(/[\s,]+/).filter(Boolean);
      return [true, parts.map((part) => coerce(part, itemType, name))];
    };
  } else if (type === "string") {
    const long = (schema.maxLength || 0) > 200 || /^(code|command|content|script|body|source)$/i.test(name);
    input = long
      ? el("textarea", { id, name, rows: 3, placeholder: "text" })
      : el("input", { id, name, type: "text", autocomplete: "off", placeholder: "text" });
    if (hasDefault) input.value = String(schema.default);
    read = () => (input.value === "" ? [false] : [true, input.value]);
  } else {
    input = el("textarea", { id, name, rows: 2, placeholder: "JSON value" });
    if (hasDefault) input.value = JSON.stringify(schema.default);
    read = () => (input.value.trim() === "" ? [false] : [true, parseJSON(input.value, name)]);
  }
  input.dataset.kind = type;
  if (type === "array" && ["integer", "number"].includes(mainType(schema.items || {}))) {
    input.dataset.point = "true"; // a click on a screenshot can fill it with [x, y]
  }
  const star = required ? el("span", { class: "req", title: "required" }, "*") : null;
  const label = el("label", { for: id }, name, star,
    el("span", { class: "type" }, type === "array" ? `array of ${mainType(schema.items || {})}` : type));
  const row = el("div", { class: "field" }, label, input, hint ? el("div", { class: "hint" }, hint) : null);
  return { row, input, read, name, required, type };
}

function formatOption(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * A form for one tool. onSubmit(arguments) runs when it is sent; errors in fields are shown in
 * the form and nothing is sent.
 */
export function toolForm(tool, onSubmit, { collapsed = false } = {}) {
  const params = tool.parameters || {};
  const required = new Set(params.required || []);
  const idPrefix = `tool-${tool.name}`;
  const fields = Object.entries(params.properties || {}).map(
    ([name, schema]) => field(name, schema, required.has(name), idPrefix));
  const problem = el("div", { class: "problem", role: "alert" });
  const button = el("button", { type: "submit", class: "call", "data-tool": tool.name }, `Call ${tool.name}`);
  const body = [tool.description ? el("div", { class: "tool-doc" }, tool.description) : null,
    fields.map((f) => f.row), el("div", { class: "actions" }, button), problem];
  const name = el("code", { class: "tool-name" }, tool.name);
  const form = el("form", { class: "tool", id: idPrefix, "data-tool": tool.name, novalidate: true },
    collapsed ? el("details", {}, el("summary", { class: "tool-head" }, name), body)
      : [el("div", { class: "tool-head" }, name), body]);
  form.addEventListener("keydown", (event) => { // Enter in a one-line field sends; in a text box, Ctrl+Enter
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.tagName === "TEXTAREA") {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.textContent = "";
    const args = {};
    try {
      for (const f of fields) {
        const [present, value] = f.read();
        if (present) args[f.name] = value;
        else if (f.required) throw new FieldError(`${f.name} is required`);
      }
    } catch (error) {
      if (!(error instanceof FieldError)) throw error;
      problem.textContent = error.message;
      return;
    }
    await onSubmit(args, form);
  });
  return { form, fields, button };
}
