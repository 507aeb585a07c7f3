// The trajectory viewer: list episodes with reward/success/failure, filter them, step through one.
// Opened by `omnienv view FILE` (?source=server) it reads that file through /api; elsewhere it
// opens a file from the user's disk.

import { badge, el, formatCall, formatReward, jsonDetails, renderBlocks } from "./render.js";

const root = new URL("../", document.baseURI);
const $ = (id) => document.getElementById(id);

const view = { summaries: [], shown: [], source: null, current: null, episode: null, step: 0 };

// -- sources: the server's file, or one the user opens -------------------------------------------

function summarize(record, index, line) {
  const steps = Array.isArray(record.steps) ? record.steps : [];
  const failure = record.failure && typeof record.failure === "object" ? record.failure : null;
  // a void episode has no reward: never shown, averaged or filtered as a score
  const reward = failure ? null : typeof record.reward === "number" ? record.reward
    : steps.reduce((sum, step) => sum + (step && typeof step.reward === "number" ? step.reward : 0), 0);
  return {
    index, line, episode: record.index, env: record.env, task_id: record.task_id, seed: record.seed,
    policy: record.policy, reward, success: record.success ?? null, done: record.done,
    truncated: record.truncated, turns: record.turns ?? steps.length, stopped: record.stopped ?? null,
    failure, seconds: record.seconds,
  };
}

/** A file from the user's disk, read by the rules of `omnienv view` (viewer.py's TrajectoryIndex):
 * a line that is not a JSON object, or a `{"kind": ...}` record with no steps (a training step, a
 * note), is no episode; training steps are counted, other lines reported. */
function localSource(name, text) {
  const records = [];
  const problems = [];
  let trainSteps = 0;
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const record = JSON.parse(line);
      if (!record || typeof record !== "object" || Array.isArray(record)) {
        problems.push(`line ${i + 1}: not an episode record`);
      } else if (record.kind === "train_step") {
        trainSteps += 1;
      } else if (typeof record.kind === "string" && !("steps" in record)) {
        problems.push(`line ${i + 1}: a ${JSON.stringify(record.kind.slice(0, 40))} record, not an episode`);
      } else {
        records.push([record, i + 1]);
      }
    } catch (error) {
      problems.push(`line ${i + 1}: not an episode record (${error.message})`);
    }
  });
  return {
    name, problems, kind: trainSteps && !records.length ? "training" : "trajectories", local: true,
    summaries: records.map(([record, line], index) => summarize(record, index, line)),
    episode: async (index) => records[index][0],
  };
}

async function serverSource() {
  const response = await fetch(new URL("api/trajectory", root));
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const listing = await response.json();
  return {
    name: listing.path, kind: listing.kind, problems: listing.problems || [], summaries: listing.episodes,
    episode: async (index) => {
      const reply = await fetch(new URL(`api/episodes/${index}`, root));
      if (!reply.ok) throw new Error(`episode ${index}: HTTP ${reply.status}`);
      return reply.json();
    },
  };
}

function useSource(source, { reloaded = false } = {}) {
  view.source = source;
  view.summaries = source.summaries;
  $("file-name").textContent = source.name;
  $("file-note").textContent = source.kind === "training"
    ? source.local ? "This file is a training log, with no episodes: `omnienv view FILE` draws its curves."
      : "This file is a training log, with no episodes: its curves are on the summary page."
    : source.problems.length
      ? `${source.problems.length} line(s) skipped: ${source.problems.slice(0, 3).join("; ")}` : "";
  applyFilters();
  if (reloaded) return;
  const wanted = new URLSearchParams(location.hash.slice(1));
  const index = Number(wanted.get("episode"));
  if (wanted.has("episode") && view.summaries[index]) openEpisode(index, Number(wanted.get("step")) || 0);
}

// -- the list ------------------------------------------------------------------------------------

function readNumber(id) {
  const text = $(id).value.trim();
  return text === "" || Number.isNaN(Number(text)) ? null : Number(text);
}

function applyFilters() {
  const min = readNumber("filter-min");
  const max = readNumber("filter-max");
  const failure = $("filter-failure").value;
  const success = $("filter-success").value;
  const text = $("filter-text").value.trim().toLowerCase();
  view.shown = view.summaries.filter((s) => {
    if ((min !== null || max !== null) && typeof s.reward !== "number") return false;
    if (min !== null && s.reward < min) return false;
    if (max !== null && s.reward > max) return false;
    if (failure === "failed" && !s.failure) return false;
    if (failure === "ok" && s.failure) return false;
    if (success === "yes" && s.success !== true) return false;
    if (success === "no" && s.success !== false) return false;
    if (success === "unknown" && s.success !== null && s.success !== undefined) return false;
    const names = [s.task_id, s.env, s.policy].map((v) => String(v ?? "").toLowerCase());
    if (text && !names.some((name) => name.includes(text))) return false;
    return true;
  });
  renderList();
}

function renderList() {
  const body = $("episodes").querySelector("tbody");
  body.replaceChildren(...view.shown.map((s) => el("tr", {
    class: `${s.failure ? "failed" : ""}${s.index === view.current ? " selected" : ""}`,
    "data-index": s.index, onclick: () => openEpisode(s.index),
  },
  el("td", {}, s.index), el("td", {}, s.task_id ?? "–"), el("td", { class: "num" }, formatReward(s.reward)),
  el("td", {}, s.success === true ? "yes" : s.success === false ? "no" : "–"),
  el("td", { class: "num" }, s.turns),
  el("td", {}, s.failure ? s.failure.kind : s.stopped ? `stopped: ${s.stopped}` : ""))));
  const n = view.shown.length;
  const scored = view.shown.filter((s) => typeof s.reward === "number");
  const mean = scored.length ? scored.reduce((sum, s) => sum + s.reward, 0) / scored.length : NaN;
  const judged = view.shown.filter((s) => typeof s.success === "boolean");
  const wins = judged.filter((s) => s.success).length;
  const rate = judged.length ? `${Math.round((100 * wins) / judged.length)}%` : "–";
  const failed = view.shown.filter((s) => s.failure).length;
  $("filter-summary").textContent =
    `showing ${n} of ${view.summaries.length} · mean reward ${formatReward(mean)} · success ${rate}`
    + ` · ${failed} failed`;
}

// -- one episode ---------------------------------------------------------------------------------

async function openEpisode(index, step = 0) {
  view.current = index;
  renderList();
  let record;
  try {
    record = await view.source.episode(index);
  } catch (error) {
    $("episode").replaceChildren(el("div", { class: "problem" }, error.message));
    return;
  }
  if (view.current !== index) return; // another one was chosen meanwhile
  view.episode = record;
  const steps = Array.isArray(record.steps) ? record.steps : [];
  view.step = Math.max(0, Math.min(step, steps.length - 1));
  showEpisode();
}

/** Render the chosen episode, or say in its pane that it cannot be: a record the page did not
 * foresee must never leave the previous episode on screen under the new one's name. */
function showEpisode() {
  try {
    renderEpisode();
  } catch (error) {
    $("episode").className = "";
    $("episode").replaceChildren(el("div", { class: "problem", id: "episode-problem" },
      `Episode ${view.current} cannot be shown (${error.message}); its line in the file is not a trajectory `
      + "this viewer can read."));
    history.replaceState(null, "", `#episode=${view.current}&step=${view.step}`);
  }
}

function meta(label, value) {
  return el("div", { class: "meta" }, el("span", { class: "muted" }, label), el("b", {}, value ?? "–"));
}

function renderEpisode() {
  const record = view.episode;
  const summary = view.summaries[view.current];
  const steps = Array.isArray(record.steps) ? record.steps : [];
  const badges = [];
  if (summary.success === true) badges.push(badge("success", "good"));
  if (summary.success === false) badges.push(badge("no success", "warn"));
  if (record.truncated) badges.push(badge("truncated", "warn"));
  else if (record.done) badges.push(badge("done", "good"));
  if (record.stopped) badges.push(badge(`stopped: ${record.stopped}`, "warn"));
  if (record.failure) badges.push(badge(`failure: ${record.failure.kind}`, "bad"));
  const parts = [
    el("div", { class: "card" },
      el("h2", {}, `Episode ${view.current}`, " ", badges),
      el("div", { class: "metas" }, meta("env", record.env), meta("task", record.task_id),
        meta("seed", record.seed), meta("policy", record.policy),
        meta("reward", formatReward(summary.reward)), meta("turns", steps.length),
        meta("seconds", record.seconds)),
      record.failure
        ? el("pre", { class: "text failure" }, `${record.failure.kind}: ${record.failure.message}`) : null,
      jsonDetails("usage", record.usage)),
  ];
  if (record.prompt) {
    parts.push(el("div", { class: "card prompt", id: "prompt" }, el("h3", {}, "Prompt"),
      renderBlocks(record.prompt.content)));
  }
  parts.push(stepper(steps));
  if (Array.isArray(record.messages) && record.messages.length) {
    parts.push(el("details", { class: "card messages", id: "messages" },
      el("summary", {}, `Conversation (${record.messages.length} messages)`),
      record.messages.map(renderMessage)));
  }
  if (Array.isArray(record.model_calls) && record.model_calls.length) parts.push(modelCalls(record.model_calls));
  $("episode").className = "";
  $("episode").replaceChildren(...parts);
  history.replaceState(null, "", `#episode=${view.current}&step=${view.step}`);
}

function stepper(steps) {
  const box = el("div", { class: "card steps", id: "steps" });
  if (!steps.length) {
    box.append(el("p", { class: "muted" }, "No steps."));
    return box;
  }
  const all = $("step-all-state") ? $("step-all-state").checked : false;
  const toggle = el("input", { type: "checkbox", id: "step-all-state", checked: all || undefined });
  toggle.addEventListener("change", showEpisode);
  box.append(el("div", { class: "stepper" },
    el("button", { type: "button", id: "step-prev", onclick: () => go(-1), disabled: view.step === 0 },
      "◀ prev"),
    el("span", { id: "step-pos" }, `step ${view.step + 1} / ${steps.length}`),
    el("button", { type: "button", id: "step-next", onclick: () => go(1),
      disabled: view.step >= steps.length - 1 }, "next ▶"),
    el("label", { class: "inline" }, toggle, " all steps")));
  box.append(strip(steps));
  let running = 0;
  const cumulative = steps.map((s) => (running += Number(s.reward) || 0));
  const chosen = all ? steps.map((s, i) => i) : [view.step];
  for (const i of chosen) box.append(renderStep(steps[i], i, cumulative[i]));
  return box;
}

/** One small button per step, coloured by what happened there; a click jumps to it. */
function strip(steps) {
  return el("div", { class: "strip", id: "step-strip" }, steps.map((step, i) => {
    const observation = step.observation || {};
    const kind = step.failure || observation.is_error ? "bad" : step.reward > 0 ? "good"
      : step.reward < 0 ? "warn" : "";
    const call = step.call || {};
    return el("button", {
      type: "button", class: `tick ${kind}${i === view.step ? " current" : ""}`, "data-step": i + 1,
      title: `#${i + 1} ${call.name || "?"} · reward ${formatReward(step.reward)}`,
      onclick: () => {
        view.step = i;
        showEpisode();
      },
    });
  }));
}

function renderStep(step, i, cumulative) {
  const observation = step.observation || {};
  const badges = [badge(`reward ${formatReward(step.reward)}`, step.reward > 0 ? "good" : "")];
  badges.push(el("span", { class: "muted" }, ` total ${formatReward(cumulative)}`));
  if (observation.is_error) badges.push(badge("tool error", "bad"));
  if (step.done) badges.push(badge("done", "good"));
  if (step.truncated) badges.push(badge("truncated", "warn"));
  if (step.failure) badges.push(badge(`failure: ${step.failure.kind}`, "bad"));
  const call = step.call || {};
  return el("div", { class: `entry step${observation.is_error ? " error" : ""}`, "data-step": i + 1 },
    el("div", { class: "entry-head" }, el("span", { class: "num" }, `#${i + 1}`),
      el("code", { class: "call" }, formatCall(call.name, call.arguments)),
      typeof step.seconds === "number"
        ? el("span", { class: "muted" }, ` ${(step.seconds * 1000).toFixed(1)} ms`) : null),
    renderBlocks(observation.content),
    el("div", { class: "entry-foot" }, badges),
    step.failure ? el("pre", { class: "text failure" }, step.failure.message) : null,
    jsonDetails("info", step.info));
}

/** Whether `url` may be an <img> src: an inline picture only. A remote URL in a hostile file would
 * tell its author who opened the file, when, and from where (a tracking pixel). */
function inlineImage(url) {
  return typeof url === "string" && url.startsWith("data:image/");
}

function renderMessage(message) {
  if (!message || typeof message !== "object") {
    return el("div", { class: "message" }, el("div", { class: "role" }, "?"),
      el("pre", { class: "text" }, JSON.stringify(message)));
  }
  const body = el("div", { class: "message-body" });
  const content = message.content;
  if (typeof content === "string") body.append(el("pre", { class: "text" }, content));
  else if (Array.isArray(content)) {
    for (const part of content) {
      const image = part && part.image_url;
      const url = typeof image === "string" ? image : image && image.url;
      if (inlineImage(url)) body.append(el("img", { class: "shot", src: url, alt: "image in the conversation" }));
      else if (url) body.append(el("pre", { class: "text remote-image" }, `image at ${String(url)} (not fetched)`));
      else if (part && typeof part.text === "string") body.append(el("pre", { class: "text" }, part.text));
      else if (part && part.type === "image") body.append(renderBlocks([part]));
      else body.append(el("pre", { class: "text" }, JSON.stringify(part)));
    }
  }
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    const fn = (call && call.function) || call || {};
    let args = fn.arguments;
    try {
      args = typeof args === "string" ? JSON.parse(args) : args;
    } catch {
      args = { raw: fn.arguments };
    }
    body.append(el("code", { class: "call" }, `→ ${formatCall(fn.name, args)}`));
  }
  const role = typeof message.role === "string" ? message.role : "";
  return el("div", { class: `message ${role}` },
    el("div", { class: "role" }, role || "?",
      message.tool_call_id ? ` (${message.tool_call_id})` : ""), body);
}

/** The model calls a capture recorded: each completion's token ids, coloured by how likely the
 * server found them (green: sure; red: a gamble), so the tokens RL trains on can be read. */
function modelCalls(calls) {
  return el("details", { class: "card model-calls", id: "model-calls" },
    el("summary", {}, `Model calls (${calls.length}), tokens by log-probability`),
    calls.map((call, i) => {
      call = call && typeof call === "object" ? call : {};
      const list = (value) => (Array.isArray(value) ? value : []);
      const ids = list(call.completion_token_ids);
      const logprobs = list(call.logprobs);
      const head = `#${call.index ?? i} · ${list(call.prompt_token_ids).length} prompt / ${ids.length} completion `
        + `tokens · ${call.finish_reason || "?"} · ${((call.latency_s || 0) * 1000).toFixed(1)} ms`;
      const tokens = el("div", { class: "tokens" }, ids.map((id, t) => {
        const logprob = logprobs[t];
        const known = typeof logprob === "number";
        const p = known ? Math.exp(logprob) : null;
        return el("span", {
          class: "token", "data-logprob": known ? String(logprob) : "",
          style: known ? `background: hsl(${Math.round(120 * p)} 70% 45% / 0.35)` : "",
          title: known ? `id ${id} · logprob ${logprob.toFixed(3)} (p ${p.toFixed(3)})` : `id ${id} · no logprob`,
        }, String(id));
      }));
      return el("div", { class: "message" }, el("div", { class: "role" }, head),
        call.missing ? el("p", { class: "muted" }, call.missing) : null, tokens);
    }));
}

function go(delta) {
  const steps = (view.episode && view.episode.steps) || [];
  const next = view.step + delta;
  if (next < 0 || next >= steps.length) return;
  view.step = next;
  showEpisode();
}

function moveEpisode(delta) {
  if (!view.shown.length) return;
  const at = view.shown.findIndex((s) => s.index === view.current);
  const next = view.shown[Math.max(0, Math.min(view.shown.length - 1, at + delta))];
  if (next && next.index !== view.current) openEpisode(next.index);
}

// -- start ---------------------------------------------------------------------------------------

async function main() {
  for (const id of ["filter-min", "filter-max", "filter-failure", "filter-success", "filter-text"]) {
    $(id).addEventListener("input", applyFilters);
  }
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, textarea, select")) return;
    const moves = { ArrowLeft: () => go(-1), ArrowRight: () => go(1), ArrowUp: () => moveEpisode(-1),
      ArrowDown: () => moveEpisode(1) };
    if (moves[event.key]) {
      event.preventDefault();
      moves[event.key]();
    }
  });
  $("file-input").addEventListener("change", async () => {
    const file = $("file-input").files[0];
    if (file) useSource(localSource(file.name, await file.text()));
  });
  let source = null;
  if (new URLSearchParams(location.search).get("source") === "server") {
    try {
      source = await serverSource();
    } catch (error) {
      $("file-note").textContent = `cannot read the served file: ${error.message}`;
    }
  }
  if (source) {
    useSource(source);
    $("tabs").hidden = false; // the summary page reads the served file: there is none for a local one
    $("reload").hidden = false;
    $("reload").addEventListener("click", async () => {
      try {
        useSource(await serverSource(), { reloaded: true });
      } catch (error) {
        $("file-note").textContent = `cannot read the served file: ${error.message}`;
      }
    });
  } else {
    $("file-open").hidden = false;
    $("file-note").textContent ||= "Open a file from your disk (it is read in this browser, not uploaded).";
  }
  document.body.dataset.ready = "true";
}

main();
