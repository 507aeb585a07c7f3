// The play page: pick a task, reset, call tools through forms built from their JSON Schemas.
// It speaks the server's HTTP session routes; the session is closed when the page goes away.

import { toolForm } from "./form.js";
import { badge, el, formatCall, formatReward, jsonDetails, renderBlocks } from "./render.js";

const root = new URL("../", document.baseURI);
const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(message, code, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(new URL(path, root), init);
  } catch (error) {
    throw new ApiError(`cannot reach the server (${error.message}); is it still running?`, "NETWORK", 0);
  }
  let payload = null;
  try {
    payload = await response.json();
  } catch {
    payload = null;
  }
  if (!response.ok || (payload && payload.type === "error")) {
    const data = (payload && payload.data) || {};
    const message = data.message || `${method} /${path}: HTTP ${response.status}`;
    throw new ApiError(message, data.code, response.status);
  }
  return payload;
}

const session = { id: null, playing: false, steps: 0, total: 0, forms: [] };

function setStatus(text, kind) {
  const node = $("status-state");
  node.textContent = text;
  node.className = `badge ${kind || ""}`;
}

function updateCounters(lastReward) {
  $("status-step").textContent = String(session.steps);
  $("status-reward").textContent = formatReward(lastReward);
  $("status-total").textContent = formatReward(session.total);
}

function addEntry(entry) {
  $("transcript").append(entry);
  entry.scrollIntoView({ block: "end" });
}

function errorEntry(message, code) {
  return el("div", { class: "entry error", "data-kind": "error" },
    el("div", { class: "entry-head" }, badge(code || "error", "bad")), el("pre", { class: "text" }, message));
}

function setToolsEnabled(enabled) {
  for (const { button } of session.forms) button.disabled = !enabled;
  $("tools-note").textContent = enabled ? "" : session.id ? "The episode is over: reset to play again."
    : "Reset to start an episode.";
}

async function openSession() {
  const { session_id: id } = await api("POST", "sessions");
  session.id = id;
  return id;
}

function closeSession() {
  if (!session.id) return;
  fetch(new URL(`sessions/${session.id}`, root), { method: "DELETE", keepalive: true }).catch(() => {});
  session.id = null;
}

async function reset() {
  const problem = $("task-problem");
  problem.textContent = "";
  const body = {};
  const split = $("split").value;
  const task = $("task").value;
  const seed = $("seed").value.trim();
  if (task) body.task_id = task;
  else if (split) body.split = split;
  if (seed !== "") {
    const n = Number(seed);
    if (!Number.isInteger(n) || n < 0) {
      problem.textContent = "seed must be a non-negative integer, or empty for a random one";
      return;
    }
    body.seed = n;
  }
  $("reset").disabled = true;
  try {
    if (!session.id) await openSession();
    let reply;
    try {
      reply = await api("POST", `sessions/${session.id}/reset`, body);
    } catch (error) {
      if (error.code !== "SESSION_NOT_FOUND") throw error;
      await openSession(); // reaped after being idle: start over in a fresh one
      reply = await api("POST", `sessions/${session.id}/reset`, body);
    }
    session.playing = true;
    session.steps = 0;
    session.total = 0;
    $("transcript").replaceChildren(el("div", { class: "entry prompt", "data-kind": "prompt" },
      el("div", { class: "entry-head" }, badge("reset", "info"),
        el("span", { class: "muted" }, task ? `task ${task}` : split ? `random ${split} task` : "random task",
          body.seed !== undefined ? ` · seed ${body.seed}` : "")),
      pickable(renderBlocks(reply.data.observation.content))));
    updateCounters(undefined);
    setStatus("playing", "info");
    setToolsEnabled(true);
    $("show-state").disabled = false;
    const first = document.querySelector("#tools input, #tools textarea, #tools select");
    if (first) first.focus();
  } catch (error) {
    problem.textContent = error.message;
  } finally {
    $("reset").disabled = false;
  }
}

async function callTool(name, args, form) {
  if (!session.playing) {
    addEntry(errorEntry("Reset first: there is no episode running.", "NOT_RESET"));
    return;
  }
  const action = { type: "call_tool", tool_name: name, arguments: args };
  const button = form.querySelector("button.call");
  button.disabled = true;
  let data;
  try {
    data = (await api("POST", `sessions/${session.id}/step`, action)).data;
  } catch (error) {
    const hint = error.code === "SESSION_NOT_FOUND" ? " The session expired: reset to start again." : "";
    addEntry(errorEntry(error.message + hint, error.code));
    if (error.code === "SESSION_NOT_FOUND" || error.code === "EPISODE_OVER") {
      session.playing = false;
      setToolsEnabled(false);
    } else {
      button.disabled = false;
    }
    return;
  }
  button.disabled = false;
  const result = data.observation.result || {};
  const reward = typeof data.reward === "number" ? data.reward : 0;
  session.steps += 1;
  session.total += reward;
  const over = Boolean(data.done);
  const badges = [badge(`reward ${formatReward(reward)}`, reward > 0 ? "good" : "")];
  if (result.is_error) badges.push(badge("tool error", "bad"));
  if (over) badges.push(badge(data.truncated ? "truncated" : "done", data.truncated ? "warn" : "good"));
  if (data.failure) badges.push(badge(`failure: ${data.failure.kind}`, "bad"));
  addEntry(el("div", { class: `entry step${result.is_error ? " error" : ""}`, "data-kind": "step",
    "data-step": session.steps },
  el("div", { class: "entry-head" }, el("span", { class: "num" }, `#${session.steps}`),
    el("code", { class: "call" }, formatCall(name, args))),
  pickable(renderBlocks(result.content)),
  el("div", { class: "entry-foot" }, badges),
  data.failure ? el("pre", { class: "text failure" }, data.failure.message) : null,
  jsonDetails("info", data.info)));
  updateCounters(reward);
  if (over) {
    session.playing = false;
    setToolsEnabled(false);
    const success = data.info && data.info.success;
    const kind = data.failure ? "bad" : success === false ? "warn" : "good";
    setStatus(data.truncated ? "truncated" : "done", kind);
    addEntry(el("div", { class: `entry summary ${kind}`, "data-kind": "summary" },
      `Episode over after ${session.steps} step(s): total reward ${formatReward(session.total)}`,
      success === true ? " · success" : success === false ? " · no success" : ""));
  } else {
    const input = form.querySelector("input:not([type=checkbox]), textarea");
    if (input) {
      input.focus();
      input.select();
    }
  }
}

// -- screenshots to coordinates: click a picture, get its pixel [x, y] in a form field ---------------

let lastPointField = null;
document.addEventListener("focusin", (event) => {
  if (event.target.dataset && event.target.dataset.point) lastPointField = event.target;
});

function pointTargets() {
  if (lastPointField && lastPointField.isConnected) return [lastPointField];
  const all = [...document.querySelectorAll("#tools [data-point][name=coordinate]")];
  const visible = all.filter((field) => { // in unfolded forms
    const folder = field.closest("details");
    return !folder || folder.open;
  });
  return visible.length ? visible : all;
}

/** Images in ``box`` answer a click with the pixel under the pointer, in the image's own pixels. */
function pickable(box) {
  const images = box.querySelectorAll("img.shot");
  if (!images.length || !document.querySelector("#tools [data-point]")) return box;
  for (const img of images) {
    img.classList.add("pick");
    img.title = "click: put this point's [x, y] into a coordinate field (the last one you used)";
    img.addEventListener("click", (event) => {
      event.stopImmediatePropagation();
      const rect = img.getBoundingClientRect();
      const left = event.clientX - rect.left - img.clientLeft; // inside the border
      const top = event.clientY - rect.top - img.clientTop;
      const clamp = (value, size) => Math.min(size - 1, Math.max(0, Math.floor(value)));
      const x = clamp((left * img.naturalWidth) / img.clientWidth, img.naturalWidth);
      const y = clamp((top * img.naturalHeight) / img.clientHeight, img.naturalHeight);
      const targets = pointTargets();
      for (const field of targets) {
        field.value = `${x}, ${y}`;
        field.classList.remove("flash");
        void field.offsetWidth; // restart the highlight
        field.classList.add("flash");
      }
      const names = targets.length > 3 ? `${targets.length} coordinate fields`
        : targets.map((f) => `${f.closest("form").dataset.tool}.${f.name}`).join(", ");
      note.textContent = names ? `[${x}, ${y}] → ${names}`
        : `[${x}, ${y}]: click into a coordinate field first`;
    }, { capture: true });
  }
  const note = el("div", { class: "hint pick-note" }, "click the picture to fill a coordinate field");
  box.append(note);
  return box;
}

async function showState() {
  if (!session.id) return;
  try {
    const reply = await api("GET", `sessions/${session.id}/state`);
    const details = jsonDetails("state", reply.data, true);
    addEntry(el("div", { class: "entry state", "data-kind": "state" }, details));
  } catch (error) {
    addEntry(errorEntry(error.message, error.code));
  }
}

const PAGE = 1000;
const MANY_TOOLS = 5; // beyond this many, tool forms start folded
const tasks = new Map(); // the listed tasks of the chosen split, by id

let listing = 0; // which call of loadTasks is the latest: older answers are dropped

async function loadTasks(more = false) {
  const call = ++listing;
  const split = $("split").value;
  const select = $("task");
  if (!more) {
    select.replaceChildren(el("option", { value: "" }, "(random task)"));
    tasks.clear();
    $("task-data").hidden = true;
  }
  $("task-count").textContent = "";
  $("more-tasks").hidden = true;
  if (!split) return;
  try {
    const offset = tasks.size;
    const page = await api("GET", `splits/${encodeURIComponent(split)}/tasks?offset=${offset}&limit=${PAGE}`);
    if (call !== listing) return;
    for (const task of page.tasks) {
      tasks.set(task.id, task);
      select.append(el("option", { value: task.id }, task.id));
    }
    const loaded = tasks.size;
    $("task-count").textContent = loaded < page.total ? `${loaded} of ${page.total} loaded` : `${page.total}`;
    $("more-tasks").hidden = loaded >= page.total;
  } catch (error) {
    $("task-problem").textContent = error.message;
  }
}

function showTaskData() {
  const select = $("task");
  const task = tasks.get(select.value);
  const box = $("task-data");
  const data = task && task.data;
  box.hidden = !data || Object.keys(data).length === 0;
  box.querySelector("pre").textContent = box.hidden ? "" : JSON.stringify(data, null, 2);
}

function toolsFromSchema(schema) {
  const branches = (schema.action && schema.action.oneOf) || [];
  return branches
    .filter((b) => b.properties && b.properties.type && b.properties.type.const === "call_tool")
    .map((b) => ({ name: b.properties.tool_name.const, description: b.description || "",
      parameters: b.properties.arguments || {} }));
}

async function main() {
  try {
    const [metadata, schema, splits] = await Promise.all(
      [api("GET", "metadata"), api("GET", "schema"), api("GET", "splits")]);
    $("env-name").textContent = metadata.name;
    $("env-description").textContent = metadata.description || "";
    document.title = `${metadata.name} · omnienv`;
    const splitSelect = $("split");
    splitSelect.append(el("option", { value: "" }, "(none)"));
    for (const split of splits.splits) splitSelect.append(el("option", { value: split }, split));
    if (splits.splits.length) splitSelect.value = splits.splits[0];
    else { // an environment without task lists: every reset draws its own episode
      splitSelect.firstChild.textContent = "(no task lists)";
      splitSelect.disabled = $("task").disabled = true;
    }
    splitSelect.addEventListener("change", () => loadTasks());
    $("more-tasks").addEventListener("click", () => loadTasks(true));
    $("task").addEventListener("change", showTaskData);
    await loadTasks();
    const tools = toolsFromSchema(schema);
    for (const tool of tools) {
      const collapsed = tools.length > MANY_TOOLS;
      const made = toolForm(tool, (args, form) => callTool(tool.name, args, form), { collapsed });
      session.forms.push(made);
      $("tools").append(made.form);
    }
    setToolsEnabled(false);
  } catch (error) {
    $("task-problem").textContent = `cannot load the environment: ${error.message}`;
  }
  $("reset").addEventListener("click", reset);
  $("show-state").addEventListener("click", showState);
  window.addEventListener("pagehide", closeSession);
  document.body.dataset.ready = "true";
}

main();
