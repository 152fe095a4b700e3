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

// What Run now sets: each field whose text differs from its parameter's default. A field left as it was drawn sets
// nothing, so the run takes the template's default, as kubectl jobflow run without -p does; for a parameter without
// a default that is the empty field (an empty text would pass for a value), and the server refuses the run naming
// it, in the command line's words.
function runParameters(declared, typed) {
  const parameters = {};
  for (const p of declared) {
    const value = typed[p.name];
    if (value !== undefined && value !== (p.value ?? "")) parameters[p.name] = value;
  }
  return parameters;
}

// Run now, Suspend and Resume (apiclient/steering.py on the server, as kubectl jobflow run NAME and
// suspend|resume jft/NAME): each enabled only when it would do something and no action is in flight
// (actionSender of dashboard.js); the answer, or why not, beside them.
function templateActions() {
  const base = `/api/jobflowtemplates/${encodeURIComponent(config.namespace)}/${encodeURIComponent(config.name)}`;
  const form = document.getElementById("run-form"), fields = document.getElementById("parameters");
  let declared = null, last = null;
  const send = actionSender(() => { if (last) draw(last); });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = {};
    for (const input of fields.querySelectorAll("input")) typed[input.name] = input.value;
    send(`${base}/run`, {parameters: runParameters(last && !last.missing ? last.parameters : [], typed)});
  });
  for (const button of form.querySelectorAll("button[type=button]")) {
    button.addEventListener("click", () => send(`${base}/${button.dataset.action}`, {}));
  }
  // Called with each view: the parameter fields are drawn again only when the declared parameters change, so what
  // is being typed stays while runs come and go.
  const draw = (view) => {
    last = view;
    const off = send.busy() || Boolean(view.missing);
    document.getElementById("action-run").disabled = off;
    document.getElementById("action-suspend").disabled = off || view.suspended;
    document.getElementById("action-resume").disabled = off || !view.suspended;
    if (view.missing) return;
    const now = JSON.stringify(view.parameters);
    if (now === declared) return;
    declared = now;
    fields.hidden = !view.parameters.length;
    fields.innerHTML = "<legend>Parameters of this run (their defaults filled in)</legend>" + view.parameters.map((p, i) =>
      `<label for="param-${i}">${esc(p.name)}</label><input id="param-${i}" name="${esc(p.name)}" value="${esc(p.value ?? "")}"` +
      `${p.value == null ? ' placeholder="no default: give it a value"' : ""} autocomplete="off">` +
      `${p.description ? `<span class="muted">${esc(p.description)}</span>` : "<span></span>"}`).join("");
  };
  return draw;
}

function jobFlowTemplatePage() {
  const controls = config.actions ? templateActions() : null;
  live(templateStream(), (view) => {
    if (controls) controls(view);
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
