// The list of JobFlows: drawn from its view on /stream, by live() of dashboard.js (loaded before this file).
// Four filters, all kept in the URL so a filtered list can be bookmarked and shared (/?ns=team&l=app=train&q=x):
// the namespace and the label selector (kubectl's -l) narrow the stream on the server (dashboard/views.py
// list_view), which also says when a selector is not valid; the words and the phase narrow what it sent, here.
"use strict";

function listPage() {
  let view = null;
  const filter = document.getElementById("filter"), phase = document.getElementById("phase");
  const namespace = document.getElementById("namespace"), labels = document.getElementById("labels");
  const problem = document.getElementById("selector-error");
  const shownPhase = (row) => row.suspended && !["Succeed", "Failed"].includes(row.phase) ? "Suspended" : row.phase;

  const drawNamespaces = () => {
    // Every namespace with a JobFlow or a JobFlowTemplate, and the chosen one even when it has none (yet).
    const names = [...new Set([...view.namespaces, ...(namespace.value ? [namespace.value] : [])])].sort();
    const wanted = [""].concat(names);
    const have = [...namespace.options].map((o) => o.value);
    if (wanted.join("\n") === have.join("\n")) return;
    const chosen = namespace.value;
    namespace.innerHTML = wanted.map((n) => `<option value="${esc(n)}">${n ? esc(n) : "all"}</option>`).join("");
    namespace.value = chosen;
  };

  const draw = () => {
    if (!view) return;
    drawNamespaces();
    problem.hidden = !view.selectorError;
    problem.textContent = view.selectorError ? `The label filter is not valid: ${view.selectorError}` : "";
    labels.setAttribute("aria-invalid", String(Boolean(view.selectorError)));
    const words = filter.value.trim().toLowerCase();
    const wanted = phase.value;
    const rows = view.jobflows.filter((row) => (!wanted || shownPhase(row) === wanted) &&
      (!words || `${row.namespace}/${row.name} ${row.phase}`.toLowerCase().includes(words)));
    const body = document.querySelector("#jobflows tbody");
    const none = view.loading ? "loading…" : view.selectorError ? "the label filter above is not valid: fix it"
      : "no JobFlow matches";
    body.innerHTML = rows.length ? rows.map((row) => `<tr data-jobflow="${esc(row.namespace)}/${esc(row.name)}">
      <td>${esc(row.namespace)}</td>
      <td><a href="/jobflows/${encodeURIComponent(row.namespace)}/${encodeURIComponent(row.name)}">${esc(row.name)}</a></td>
      <td>${phaseBadge(shownPhase(row))}</td>
      <td><progress max="1" value="${row.done}"></progress> ${esc(row.progress)}</td>
      <td>${sinceSpan(row.created, row.age)}</td><td>${esc(row.expected)}</td>
      <td>${row.failureRate == null ? "-" : Math.round(row.failureRate * 100) + "%"}</td>
      <td>${row.schedule ? `<a href="/jobflowtemplates/${encodeURIComponent(row.namespace)}/${encodeURIComponent(row.schedule)}">${esc(row.schedule)}</a>` : ""}</td></tr>`).join("")
      : `<tr><td colspan="8" class="muted">${none}</td></tr>`;
    document.getElementById("count").textContent = `${rows.length} of ${view.total}`;
    document.querySelector("#schedules tbody").innerHTML = view.schedules.map((s) =>
      `<tr><td>${esc(s.namespace)}</td><td><a href="/jobflowtemplates/${encodeURIComponent(s.namespace)}/${encodeURIComponent(s.name)}">${esc(s.name)}</a></td><td>${esc(s.schedule || "manual")}</td>
       <td>${s.suspended ? "yes" : "no"}</td></tr>`).join("") ||
      `<tr><td colspan="4" class="muted">no JobFlowTemplate</td></tr>`;
  };

  const query = new URLSearchParams(location.search);
  filter.value = query.get("q") || "";
  phase.value = query.get("phase") || "";
  labels.value = query.get("l") || "";
  if (query.get("ns")) namespace.innerHTML += `<option value="${esc(query.get("ns"))}">${esc(query.get("ns"))}</option>`;
  namespace.value = query.get("ns") || "";
  const stream = () => {
    const narrowed = new URLSearchParams();
    if (namespace.value) narrowed.set("ns", namespace.value);
    if (labels.value.trim()) narrowed.set("l", labels.value.trim());
    return narrowed.toString() ? `/stream?${narrowed}` : "/stream";
  };
  const remember = () => {
    const next = new URLSearchParams();
    if (namespace.value) next.set("ns", namespace.value);
    if (labels.value.trim()) next.set("l", labels.value.trim());
    if (filter.value) next.set("q", filter.value);
    if (phase.value) next.set("phase", phase.value);
    history.replaceState(null, "", next.toString() ? `?${next}` : location.pathname);
  };
  const retarget = live(stream(), (next) => { view = next; draw(); });
  const refilter = () => { remember(); draw(); };
  // The server narrows by namespace and labels: a new stream, whose first message is the narrowed list. The label
  // selector is sent when it is complete (Enter, or leaving the field), not at each key.
  const renarrow = () => { remember(); retarget(stream()); };
  filter.addEventListener("input", refilter);
  phase.addEventListener("change", refilter);
  namespace.addEventListener("change", renarrow);
  labels.addEventListener("change", renarrow);
}

if (config.page === "list") listPage();
