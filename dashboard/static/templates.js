// The JobTemplate and JobFlowTemplate pages: drawn from their views on /stream?kind=..., again on every change (a
// new run of the JobTemplate, a new run of the JobFlowTemplate), by live() of dashboard.js, loaded before this file.
"use strict";

function templateStream() {
  const query = new URLSearchParams({kind: config.page, namespace: config.namespace, name: config.name});
  return `/stream?${query}`;
}

function jobflowLink(namespace, name) {
  return `<a href="/jobflows/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}">${esc(name)}</a>`;
}

function facts(rows) {
  document.getElementById("facts").innerHTML = rows.map(([k, v]) => `<dt>${k}</dt><dd${v[1] ? ` id="${v[1]}"` : ""}>${v[0]}</dd>`).join("");
}

function gone(view, kind) {
  if (!view.missing) return false;
  facts([["Not there", [`no ${kind} ${esc(view.namespace)}/${esc(view.name)} now (not created yet, or deleted): it shows here as soon as it exists`]]]);
  return true;
}

function jobTemplatePage() {
  live(templateStream(), (view) => {
    if (gone(view, "JobTemplate")) return false;
    const shown = (value, none = "-") => esc(value ?? none);
    const rows = [
      ["Runs", [shown(view.runs, "none yet"), "runs"]],
      ["Succeeded", [shown(view.succeeded, 0), "succeeded"]],
      ["Failed", [shown(view.failed, 0), "failed"]],
      ["Failure rate", [view.failureRate == null ? "-" : `${Math.round(view.failureRate * 100)}%`, "failure-rate"]],
      ["Duration p50 / p90", [`${shown(view.p50)} s / ${shown(view.p90)} s`]],
    ];
    if (view.cost) rows.push(["Cost", [esc(view.cost)]]);
    const last = view.lastFailure;
    if (last) rows.push(["Last failure", [`${esc(last.job)}: ${shown(last.reason, "")} (${shown(last.time, "")})`]]);
    facts(rows);
    document.querySelector("#recent tbody").innerHTML = view.recentRuns.map((run) =>
      `<tr><td>${esc(run.name)}</td><td>${esc(run.outcome)}</td><td>${esc(run.seconds)}</td><td>${shown(run.endTime, "")}</td><td>${shown(run.reason, "")}</td></tr>`).join("")
      || `<tr><td colspan="5" class="muted">no run ended yet</td></tr>`;
    document.getElementById("used-by").innerHTML = view.usedBy.map(([ns, name]) =>
      `<li>${esc(ns)}/${jobflowLink(ns, name)}</li>`).join("") || `<li class="muted">no JobFlow now</li>`;
  });
}

function jobFlowTemplatePage() {
  live(templateStream(), (view) => {
    if (gone(view, "JobFlowTemplate")) return false;
    const rows = [
      ["Schedule", [`${esc(view.schedule || "none (runs by hand or on events)")}${view.timeZone ? ` (${esc(view.timeZone)})` : ""}`, "schedule"]],
      ["Suspended", [view.suspended ? "yes" : "no", "suspended"]],
    ];
    if (view.concurrencyPolicy) rows.push(["Concurrency", [esc(view.concurrencyPolicy)]]);
    rows.push(["Event triggers", [esc(view.triggers)]]);
    facts(rows);
    document.querySelector("#runs tbody").innerHTML = view.runs.map((run) => `<tr data-jobflow="${esc(run.name)}">
      <td>${jobflowLink(run.namespace, run.name)}</td><td>${phaseBadge(run.phase)}</td><td>${esc(run.progress)}</td>
      <td>${sinceSpan(run.created, run.age)}</td></tr>`).join("")
      || `<tr><td colspan="4" class="muted">no run yet (kubectl jobflow run ${esc(view.name)} starts one)</td></tr>`;
  });
}

if (config.page === "jobtemplate") jobTemplatePage();
if (config.page === "jobflowtemplate") jobFlowTemplatePage();
