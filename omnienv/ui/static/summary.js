// The summary page of `omnienv view FILE`: the numbers of /api/summary drawn as charts and tables.
// An eval or rollout file: reward and turn distributions, success per split and per task, failures
// apart (void: no reward, in no mean). A training log: the reward curve and one small curve per metric.
// Strings from the file are inserted as text only (el() and svg() never parse markup).

import { badge, el, formatReward } from "./render.js";
import { barChart, legend, lineChart, short, svg } from "./charts.js";

const root = new URL("../", document.baseURI);
const $ = (id) => document.getElementById(id);

function percent(rate) {
  return typeof rate === "number" ? `${(100 * rate).toFixed(1)}%` : "–";
}

function stat(id, label, value, kind = "") {
  return el("div", { class: `stat ${kind}`, id }, el("div", { class: "value" }, value),
    el("div", { class: "label" }, label));
}

function card(title, id, ...children) {
  return el("section", { class: "card", id }, el("h2", {}, title), children);
}

/** A success rate as a small bar and its percentage. */
function rateBar(rate) {
  const known = typeof rate === "number";
  return el("span", { class: "rate" },
    svg("svg", { class: "ratebar", viewBox: "0 0 100 10", width: 80, height: 10 },
      svg("rect", { class: "track", x: 0, y: 0, width: 100, height: 10, rx: 2 }),
      known ? svg("rect", { class: "fill", x: 0, y: 0, width: 100 * rate, height: 10, rx: 2 }) : null),
    ` ${percent(rate)}`);
}

function groupTable(id, heading, groups) {
  return el("table", { id, class: "groups" },
    el("thead", {}, el("tr", {}, el("th", {}, heading), el("th", { class: "num" }, "episodes"),
      el("th", {}, "success"), el("th", { class: "num" }, "mean reward"), el("th", { class: "num" }, "failed"))),
    el("tbody", {}, groups.map((g) => el("tr", { class: g.failures ? "has-failures" : "" },
      el("td", {}, g.name ?? "(none)"), el("td", { class: "num" }, g.episodes), el("td", {}, rateBar(g.success_rate)),
      el("td", { class: "num" }, formatReward(g.mean_reward ?? NaN)),
      el("td", { class: "num" }, g.failures || "")))));
}

function failuresCard(failed, total) {
  const parts = [el("p", { id: "failure-count" },
    el("b", {}, String(failed.count)), ` of ${total} episode(s) failed. They are void: no reward, `
    + "not in the mean, the histograms or the success rates.")];
  if (failed.count) {
    parts.push(el("div", { class: "kinds" }, failed.by_kind.map((k) => badge(`${k.kind}: ${k.count}`, "bad"))));
    parts.push(el("table", { id: "failure-reasons", class: "reasons" },
      el("thead", {}, el("tr", {}, el("th", {}, "kind"), el("th", {}, "reason"), el("th", { class: "num" }, "count"),
        el("th", {}, "episodes"))),
      el("tbody", {}, failed.reasons.map((r) => el("tr", {},
        el("td", {}, r.kind), el("td", {}, el("pre", { class: "text failure" }, r.message)),
        el("td", { class: "num" }, r.count),
        el("td", { class: "episodes" }, r.episodes.map((i) => [el("a", { href: `view.html?source=server#episode=${i}` },
          `#${i}`), " "]), r.count > r.episodes.length ? "…" : ""))))));
    if (failed.more_reasons) parts.push(el("p", { class: "muted" }, `and ${failed.more_reasons} more reason(s)`));
  }
  return card("Failures", "failures", parts);
}

function trajectories(s) {
  const ci = typeof s.reward_ci95 === "number" ? ` ± ${short(s.reward_ci95)}` : "";
  const overview = el("section", { class: "card wide", id: "overview" }, el("div", { class: "stats" },
    stat("stat-episodes", "episodes", s.episodes),
    stat("stat-mean", `mean reward (95% interval), over ${s.scored} scored`, `${formatReward(s.mean_reward ?? NaN)}${ci}`),
    stat("stat-success", `success (${s.successes} of ${s.scored})`, percent(s.success_rate)),
    stat("stat-turns", "mean turns", short(s.mean_turns ?? NaN)),
    stat("stat-truncated", "truncated", s.truncated),
    stat("stat-failures", "failed (void)", s.failures, s.failures ? "bad" : "")));
  const rewards = s.reward_histogram.length
    ? barChart(s.reward_histogram, { label: "reward" }) : el("p", { class: "muted" }, "No scored episodes.");
  const turns = s.turns_histogram.length
    ? barChart(s.turns_histogram, { label: "turns" }) : el("p", { class: "muted" }, "No scored episodes.");
  const note = s.failures ? `${s.scored} scored episode(s); ${s.failures} failed one(s) are not drawn.`
    : `${s.scored} scored episode(s).`;
  return [
    overview,
    card("Reward distribution", "rewards", rewards, el("p", { class: "muted" }, note)),
    card("Turns per episode", "turns", turns, el("p", { class: "muted" }, note)),
    card("Success by split", "splits", groupTable("by-split", "split", s.by_split)),
    failuresCard(s.failed, s.episodes),
    el("section", { class: "card wide", id: "tasks" }, el("h2", {}, `Success by task (${s.by_task.length})`),
      el("div", { class: "scroll" }, groupTable("by-task", "task", s.by_task))),
  ];
}

function training(s) {
  const r = s.reward;
  const overview = el("section", { class: "card wide", id: "overview" }, el("div", { class: "stats" },
    stat("stat-steps", s.steps ? `steps (${short(s.first_step)}–${short(s.last_step)})` : "steps", s.steps),
    stat("stat-last", "last reward", formatReward(r.last ?? NaN)),
    stat("stat-average", `moving average, last ${r.window} step(s)`, formatReward(r.last_average ?? NaN)),
    stat("stat-best", "best reward", formatReward(r.best ?? NaN)),
    stat("stat-mean", "mean reward, all steps", formatReward(r.mean ?? NaN)),
    s.unscored_steps ? stat("stat-unscored", "steps with no scored rollout (no point)", s.unscored_steps, "bad")
      : null));
  const series = [
    { points: r.points, class: "raw", name: "reward (batch mean)" },
    { points: r.moving_average, class: "avg", name: `moving average (${r.window} steps)` },
  ];
  const curve = r.points.length
    ? [lineChart(series, { label: "reward per step" }), legend(series)]
    : el("p", { class: "muted" }, "No reward logged yet.");
  const thinned = r.every > 1 ? el("p", { class: "muted" }, `one point in ${r.every} drawn (the average is over every step)`) : null;
  const metrics = s.metrics.map((m) => el("section", { class: "card metric", "data-metric": m.name },
    el("h3", {}, el("code", {}, m.name)),
    el("p", { class: "muted" }, `last ${short(m.last)} · min ${short(m.min)} · max ${short(m.max)}`),
    lineChart([{ points: m.points, class: "metric", name: m.name }],
      { label: m.name, width: 320, height: 150, compact: true })));
  return [
    overview,
    card("Reward", "reward-curve", curve, thinned),
    metrics.length ? el("section", { class: "card wide", id: "metrics" }, el("h2", {}, "Other metrics"),
      el("div", { class: "metric-grid" }, metrics)) : null,
  ];
}

async function load() {
  const response = await fetch(new URL("api/summary", root));
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const s = await response.json();
  $("file-name").textContent = s.path;
  $("file-note").textContent = s.skipped ? `${s.skipped} line(s) skipped: ${s.problems.join("; ")}` : "";
  const isTraining = s.kind === "training";
  document.title = `omnienv · ${isTraining ? "training" : "summary"} · ${s.path}`;
  $("title").textContent = isTraining ? "training" : "summary";
  $("tab-episodes").hidden = isTraining;
  $("summary").className = `summary ${s.kind}`;
  $("summary").dataset.kind = s.kind;
  $("summary").replaceChildren(...(isTraining ? training(s) : trajectories(s)).filter(Boolean));
}

async function main() {
  if (new URLSearchParams(location.search).get("source") !== "server") {
    $("tabs").hidden = true;
    $("reload").hidden = true;
    $("summary").replaceChildren(el("p", { class: "muted" },
      "The summary page shows the file that `omnienv view FILE` serves."));
    document.body.dataset.ready = "true";
    return;
  }
  const show = async () => {
    try {
      await load();
    } catch (error) {
      $("file-note").textContent = `cannot read the served file: ${error.message}`;
    }
  };
  $("reload").addEventListener("click", show);
  await show();
  document.body.dataset.ready = "true";
}

main();
