// The dashboard's only script: draws the page from the JSON views the server sends on /stream (server-sent
// events), again on every change. No framework, nothing fetched from elsewhere. The server computes every fact
// and every position (dashboard/views.py, dashboard/layout.py); this file only draws them and handles input.
"use strict";

const config = JSON.parse(document.getElementById("config").textContent);
const NODE_W = 190, NODE_H = 66;

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
}

function badge(text, tone) {
  return `<span class="badge tone-${esc(tone)}">${esc(text)}</span>`;
}

const PHASE_TONES = {Succeed: ["done", "✓"], Running: ["running", "▶"], Pending: ["pending", "…"],
  Failed: ["failed", "✗"], Suspended: ["trouble", "‖"], Terminating: ["trouble", "!"], "": ["waiting", "○"]};

function phaseBadge(phase) {
  const [tone, glyph] = PHASE_TONES[phase] || ["waiting", "○"];
  return `<span class="badge tone-${tone}" data-phase="${esc(phase)}">${glyph} ${esc(phase || "no status yet")}</span>`;
}

// Ages count up by themselves: every element with data-since shows the time since then, as kubectl prints ages
// (a view is only sent when something changed, and a vcjob that runs for an hour changes nothing meanwhile).
function ago(since) {
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(since)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 600) return `${Math.floor(s / 60)}m${s % 60 ? (s % 60) + "s" : ""}`;
  if (s < 3 * 3600) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? Math.floor((s % 3600) / 60) + "m" : ""}`;
  return `${Math.floor(s / 86400)}d`;
}

function sinceSpan(since, fallback, tag = "span") {
  return since ? `<${tag} data-since="${esc(since)}">${ago(since)}</${tag}>` : esc(fallback ?? "-");
}

setInterval(() => {
  for (const element of document.querySelectorAll("[data-since]")) element.textContent = ago(element.dataset.since);
}, 1000);

// The page's stream: an EventSource, reconnected by the browser itself (the server sends "retry: 1000"). A browser
// opens at most 6 HTTP/1.1 connections to one host and each open stream holds one, so a hidden tab closes its
// stream (the 7th tab of the dashboard would never load otherwise) and opens it again when shown: its first
// message is the view as it is now, drawn at once.
// It answers a function that moves the page to another stream (the list page's filters are in its URL).
function live(url, draw) {
  const indicator = document.getElementById("live");
  const say = (text, on) => { indicator.textContent = text; indicator.className = `live ${on ? "on" : "off"}`; };
  // A big view takes a while to draw: views that arrive meanwhile are not all drawn, only the newest, and never
  // sooner than twice the last drawing's time after it, so a busy 2,000-flow JobFlow leaves the page responsive.
  // A drawing's time runs until it is painted (the second animation frame after it: the first comes before the
  // paint), so style, layout and paint count, not only building the DOM; document.body.dataset.rendered is then
  // when the page's view was last on screen (ms since navigation), for the tests and benchmarks/dashboard.py.
  let source = null, latest = null, received = 0, timer = null, cost = 0, drawnAt = 0;
  const schedule = () => {
    if (timer === null) timer = setTimeout(drawLatest, Math.max(0, drawnAt + 2 * cost - performance.now()));
  };
  const drawLatest = () => {
    const started = performance.now(), drawing = received;
    let shown = false;
    try {
      shown = draw(JSON.parse(latest)) !== false;
    } finally {
      requestAnimationFrame(() => requestAnimationFrame(() => {
        drawnAt = performance.now();
        cost = drawnAt - started;
        if (shown) document.body.dataset.rendered = String(drawnAt);
        document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
        timer = null;
        if (received !== drawing) schedule();  // a newer view came while this one was drawn
      }));
    }
  };
  const open = () => {
    source = new EventSource(url);
    source.addEventListener("view", (event) => {
      say("live", true);
      latest = event.data; received += 1;
      schedule();
    });
    source.onopen = () => say("live", true);
    source.onerror = () => say("reconnecting…", false);
  };
  document.addEventListener("visibilitychange", () => {
    if (document.hidden && source) { source.close(); source = null; say("paused while hidden", false); }
    if (!document.hidden && !source) open();
  });
  if (document.hidden) say("paused while hidden", false); else open();
  return (next) => {
    url = next;
    if (source) { source.close(); open(); }
  };
}

// A page's actions (apiclient/steering.py on the server), one at a time. While one is in flight every action button
// is disabled, and stays so however often the page is drawn meanwhile (drawings ask busy()): a second click would
// start a second run, or be answered 409. Its answer, or why not, is shown in #action-result; a request that gets no
// answer (the dashboard stopped, the network gone) says so there rather than leaving "…". When it is over, redraw()
// enables the buttons again as the page's view says.
function actionSender(redraw) {
  let inFlight = false;
  const send = async (url, body) => {
    if (inFlight) return;
    inFlight = true;
    for (const button of document.querySelectorAll("button[data-action]")) button.disabled = true;
    const out = document.getElementById("action-result");
    out.textContent = "…";
    delete out.dataset.ok;
    try {
      const answer = await fetch(url, {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-JobFlow-Token": config.token}, body: JSON.stringify(body)});
      const said = await answer.json().catch(() => ({}));
      out.textContent = said.message || said.error || `HTTP ${answer.status} ${answer.statusText}`.trim();
      out.dataset.ok = String(answer.ok);
    } catch (error) {
      out.textContent = `no answer from the dashboard (${error.message || error}): is it still running? Reload the ` +
        "page to see whether it was done before trying again";
      out.dataset.ok = "false";
    } finally {
      inFlight = false;
      redraw();
    }
  };
  send.busy = () => inFlight;
  return send;
}

// ---- one JobFlow ----

function jobflowPage() {
  const base = `/api/jobflows/${encodeURIComponent(config.namespace)}/${encodeURIComponent(config.name)}`;
  let view = null, selected = null, openItems = null;
  const nodes = new Map();
  const send = actionSender(() => { if (view) { drawSummary(); drawPanel(); } });
  const act = (action, body) => send(`${base}/${action}`, body);

  function drawSummary() {
    const h = view.header;
    const facts = [
      ["Phase", phaseBadge(h.suspended && !h.ended ? "Suspended" : h.phase)],
      ["Progress", `<span id="progress">${esc(h.progress)}</span>`],
      ["Age", sinceSpan(h.created, h.age)],
    ];
    if (h.reason || h.message) facts.push([esc(h.reason || "Message"), esc(h.message || "")]);
    if (h.expected) facts.push(["Expected end", `${esc(h.expected)} (from earlier runs of its JobTemplates)`]);
    if (h.criticalPath && h.criticalPath.length) facts.push(["Critical path", esc(h.criticalPath.join(" → "))]);
    if (h.queue) facts.push(["Queue", esc(h.queue)]);
    if (h.cost) facts.push(["Cost", esc(h.cost)]);
    if (h.failureRate != null) facts.push(["Failure rate", `${Math.round(h.failureRate * 100)}% of ended vcjobs`]);
    if (h.shutdown) facts.push(["Shutdown", esc(h.shutdown === "Stop"
      ? "Stop: what runs is aborted, nothing new starts but the finally flows"
      : "Terminate: what runs is aborted, finally flows too, nothing new starts")]);
    if (view.schedule) facts.push(["Started by", `JobFlowTemplate <a href="/jobflowtemplates/${encodeURIComponent(view.namespace)}/${encodeURIComponent(view.schedule)}">${esc(view.schedule)}</a>`]);
    document.getElementById("summary").innerHTML =
      `<h1 id="title" data-phase="${esc(h.phase)}">${esc(view.namespace)}/${esc(view.name)}</h1>` +
      `<dl>${facts.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("")}</dl>`;
    // A child JobFlow's way back: the JobFlow whose flow made it.
    const parent = document.getElementById("parent");
    if (parent) {
      parent.hidden = !view.parent;
      parent.innerHTML = view.parent ? `parent: <a id="parent-link" href="${jobflowUrl(view.parent.name)}">${esc(view.parent.name)}</a>` +
        (view.parent.flow ? ` / flow <strong>${esc(view.parent.flow)}</strong>` : "") : "";
    }
    if (config.actions) {
      const busy = send.busy();
      document.getElementById("action-retry").disabled = busy || h.phase !== "Failed";
      document.getElementById("action-suspend").disabled = busy || h.ended || h.suspended;
      document.getElementById("action-resume").disabled = busy || h.ended || !h.suspended;
      document.getElementById("action-stop").disabled = busy || !h.stoppable || h.shutdown === "Stop";
      document.getElementById("action-terminate").disabled = busy || !h.stoppable || h.shutdown === "Terminate";
    }
  }

  function jobflowUrl(name) { return `/jobflows/${encodeURIComponent(config.namespace)}/${encodeURIComponent(name)}`; }

  // A flow whose work is a child JobFlow is drawn as a stack of two cards (it holds flows of its own), its name
  // marked ❐, its progress beside its state, and its third line a link to the child's own page.
  function childLink(node) {
    return `<a class="open-child" href="${jobflowUrl(node.job)}" aria-label="open JobFlow ${esc(node.job)}"><text class="detail link" x="10" y="55">❐ ${esc(clip(node.detail || "JobFlow", 26))} ↗</text></a>`;
  }

  function drawDag() {
    nodes.clear();
    for (const node of view.nodes) nodes.set(node.name, node);
    const parts = [`<svg id="dag-svg" xmlns="http://www.w3.org/2000/svg" width="${view.width}" height="${view.height}" role="group" aria-label="DAG of ${esc(view.name)}">`,
      `<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#767676"/></marker></defs>`];
    for (const edge of view.edges) {
      const a = nodes.get(edge.from), b = nodes.get(edge.to);
      if (!a || !b) continue;
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2, mid = (x1 + x2) / 2;
      parts.push(`<path class="edge" data-from="${esc(edge.from)}" data-to="${esc(edge.to)}" d="M${x1},${y1}C${mid},${y1} ${mid},${y2} ${x2},${y2}" marker-end="url(#arrow)"/>`);
      if (edge.label) parts.push(`<text class="edge-label" x="${mid - 20}" y="${(y1 + y2) / 2 - 4}">${esc(edge.label)}</text>`);
    }
    for (const node of view.nodes) {
      const child = node.childTemplate != null;
      const label = `${node.name}: ${node.state}${node.detail ? ", " + node.detail : ""}` +
        (child ? `, child JobFlow ${node.job}${node.child ? " " + node.child.progress : ""}` : "");
      parts.push(`<g class="node tone-${esc(node.tone)}${child ? " child" : ""}${node.critical ? " critical" : ""}${node.name === selected ? " selected" : ""}" id="node-${esc(node.name)}" data-flow="${esc(node.name)}" data-state="${esc(node.state)}"${node.child ? ` data-child="${esc(node.job)}" data-progress="${esc(node.child.progress)}"` : ""} tabindex="0" role="button" aria-label="${esc(label)}" transform="translate(${node.x},${node.y})">`,
        child ? `<rect class="behind" x="5" y="5" width="${NODE_W}" height="${NODE_H}" rx="6"/>` : "",
        `<rect width="${NODE_W}" height="${NODE_H}" rx="6"/>`,
        `<text class="name" x="10" y="19">${child ? "❐ " : ""}${esc(node.name)}${node.critical ? " ★" : ""}</text>`,
        `<text class="state" x="10" y="37">${esc(node.label)}${node.child ? ` · ${esc(node.child.progress)}` : ""}${node.items ? ` · ${node.items.total} ${node.items.iterations ? "iterations" : "items"}` : ""}</text>`,
        node.child && !node.items ? childLink(node) + "</g>" : node.since
          ? `<text class="detail" x="10" y="55">since ${sinceSpan(node.since, "", "tspan")}${node.estimateSeconds ? ` of ~${node.estimateSeconds}s` : ""}${node.attempts > 1 ? `, attempt ${node.attempts}` : ""}</text></g>`
          : `<text class="detail" x="10" y="55">${esc(clip(node.detail || "", 30))}</text></g>`);
    }
    parts.push("</svg>");
    const holder = document.getElementById("dag");
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.flow : null;
    holder.innerHTML = parts.join("");
    if (focused) { const again = document.getElementById(`node-${focused}`); if (again) again.focus({preventScroll: true}); }
  }

  function clip(text, length) { return text.length > length ? text.slice(0, length - 1) + "…" : text; }

  function drawPanel() {
    const panel = document.getElementById("panel");
    const node = selected && nodes.get(selected);
    if (!node) return;
    const rows = [["State", badge(node.label, node.tone)]];
    if (node.childTemplate != null) {
      rows.push(["JobFlow", node.child
        ? `<a id="child-link" href="${jobflowUrl(node.job)}">${esc(node.job)}</a> (${esc(node.child.phase || "no status yet")}, ${esc(node.child.progress)})`
        : esc(node.job) + (node.items ? "" : node.state === "Waiting" ? " (not created yet)" : " (deleted)")]);
      rows.push(["JobFlowTemplate", `<a href="/jobflowtemplates/${encodeURIComponent(config.namespace)}/${encodeURIComponent(node.childTemplate)}">${esc(node.childTemplate)}</a>`]);
    } else if (node.job) rows.push(["vcjob", esc(node.job) + (node.jobExists === false && node.state !== "Waiting" && !node.items ? " (deleted)" : "")]);
    if (node.gate) {
      rows.push(["Approval", esc(node.gate.question || "an approval gate: approve or reject it")]);
      if (node.gate.answer) rows.push(["Answer", esc(node.gate.answer)]);
      else if (node.gate.why) rows.push(["Not now", esc(node.gate.why)]);
    }
    if (node.template) rows.push(["JobTemplate", `<a href="/jobtemplates/${encodeURIComponent(config.namespace)}/${encodeURIComponent(node.template)}">${esc(node.template)}</a>`]);
    if (node.after && node.after.length) rows.push(["After", esc(node.after.join(", "))]);
    if (node.waitingFor && node.waitingFor.length) rows.push(["Waits for", esc(node.waitingFor.join(", "))]);
    if (node.message) rows.push(["Why", esc(node.message)]);
    if (node.note) rows.push(["Kind", esc(node.note)]);
    if (node.expectedStart) rows.push(["Expected start", esc(node.expectedStart)]);
    if (node.estimateSeconds != null) rows.push(["Forecast", `runs about ${node.estimateSeconds}s (its JobTemplate's median)`]);
    if (node.attempts) rows.push(["Attempts", String(node.attempts)]);
    if (node.restarts != null) rows.push(["Restarts", String(node.restarts)]);
    if (node.started) rows.push(["Started", `${sinceSpan(node.started, node.age)} ago`]);
    if (node.tasks) rows.push(["Pods", esc(node.tasks)]);
    if (node.ran) rows.push(["Ran", esc(node.ran)]);
    if (node.result) rows.push(["Result", `<code>${esc(node.result)}</code>`]);
    if (node.critical) rows.push(["Critical path", "★ on it: its delay delays the JobFlow"]);
    let items = "";
    if (node.items) {
      const counts = Object.entries(node.items.counts).map(([p, n]) => `${n} ${esc(p)}`).join(", ");
      rows.push([node.items.iterations ? "Iterations" : "Items", `${node.items.total}: ${counts}`]);
      items = openItems && openItems.flow === node.name
        ? `<div class="items" id="items"><table class="grid"><thead><tr><th>#</th><th>vcjob</th><th>State</th></tr></thead><tbody>${
            openItems.items.map((i) => `<tr><td>${i.index}</td><td>${openItems.jobFlows ? `<a href="${jobflowUrl(i.job)}">${esc(i.job)}</a>` : esc(i.job)}</td><td>${badge(i.label, i.tone)}</td></tr>`).join("")}</tbody></table></div>`
        : `<button type="button" id="show-items">Show the ${node.items.total} ${node.items.iterations ? "iterations" : "items"}</button>`;
    }
    // The logs pane (logs.js) opens below the DAG, as wide as the page: log lines are long.
    const fanOut = node.items ? ` data-items="${node.items.total}" data-iterations="${node.items.iterations ? "1" : ""}"` : "";
    // A gate has no pods, and a child JobFlow's are its flows' (its own page shows their logs).
    const logs = node.gate || node.childTemplate != null ? "" : `<button type="button" id="show-logs" data-flow="${esc(node.name)}"${fanOut} aria-controls="logs">Logs</button>`;
    const busy = send.busy() ? " disabled" : "";
    const answering = config.actions && node.gate && node.gate.open
      ? `<div class="gate" id="gate"><label for="gate-message">Message</label><input type="text" id="gate-message" placeholder="why (optional)">` +
        `<button type="button" id="gate-approve" data-action="approve"${busy}>Approve</button><button type="button" id="gate-reject" data-action="reject"${busy}>Reject</button></div>`
      : "";
    // The panel is drawn again on every change: what is being typed into the message stays, and so does the focus.
    const typing = document.getElementById("gate-message");
    const typed = typing ? typing.value : "", focused = typing !== null && document.activeElement === typing;
    const button = panel.contains(document.activeElement) && document.activeElement.tagName === "BUTTON" ? document.activeElement.id : "";
    panel.innerHTML = `<h2 id="panel-title">${esc(node.name)}</h2><dl class="facts">${rows.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("")}</dl>${logs}${answering}${items}`;
    if (button && document.getElementById(button)) document.getElementById(button).focus({preventScroll: true});
    const show = document.getElementById("show-items");
    if (show) show.addEventListener("click", () => loadItems(node.name));
    const message = document.getElementById("gate-message");
    if (message) {
      message.value = typed;
      if (focused) message.focus({preventScroll: true});
      for (const button of document.querySelectorAll("#gate button")) {
        button.addEventListener("click", () => act(button.dataset.action, {flows: [node.name], message: message.value}));
      }
    }
  }

  async function loadItems(flow) {
    const answer = await fetch(`${base}/items/${encodeURIComponent(flow)}`);
    if (answer.ok) { openItems = await answer.json(); drawPanel(); }
  }

  function drawLegend() {
    const tones = [["done", "✓ Completed"], ["running", "▶ Running"], ["pending", "… Pending"], ["trouble", "↻ Restarting"],
      ["failed", "✗ Failed"], ["waiting", "○ Waiting (not created yet)"], ["skipped", "– Skipped"]];
    document.getElementById("legend").innerHTML = tones.map(([t, w]) => badge(w, t)).join("") +
      `<span>★ critical path</span><span>❐ a child JobFlow (its link opens its own page)</span>`;
  }

  function drawTimeline() {
    const t = view.timeline, holder = document.getElementById("timeline");
    if (!t.bars.length) { holder.innerHTML = `<p class="muted">no vcjob yet</p>`; return; }
    const left = 170, width = 760, row = 20, scale = width / t.seconds;
    const parts = [`<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="${left + width + 110}" height="${t.bars.length * row + 30}" role="img" aria-label="timeline: ${t.bars.length} vcjobs over ${Math.round(t.seconds)}s; critical path ${esc(t.critical.join(" → "))}">`];
    for (let s = 0; s <= 10; s++) {
      const x = left + (width * s) / 10;
      parts.push(`<line class="axis" x1="${x}" y1="0" x2="${x}" y2="${t.bars.length * row}"/><text x="${x - 8}" y="${t.bars.length * row + 16}">${axisLabel((t.seconds * s) / 10, t.seconds)}</text>`);
    }
    t.bars.forEach((bar, i) => {
      const y = i * row + 3, start = left + bar.created * scale, run = bar.running == null ? null : left + bar.running * scale, end = left + bar.end * scale;
      parts.push(`<g class="gantt" data-job="${esc(bar.job)}" data-phase="${esc(bar.phase)}"><text x="4" y="${y + 12}">${bar.critical ? "★ " : ""}${esc(clip(bar.job, 24))}</text>`);
      parts.push(`<rect class="pending${bar.critical ? " critical" : ""}" x="${start}" y="${y + 4}" width="${Math.max((run ?? end) - start, 1)}" height="${row - 14}"><title>${esc(bar.job)}: pending</title></rect>`);
      if (run != null) parts.push(`<rect class="bar tone-${esc(bar.tone)}${bar.critical ? " critical" : ""}" x="${run}" y="${y}" width="${Math.max(end - run, 1)}" height="${row - 6}"><title>${esc(bar.job)}: ${esc(bar.phase)}</title></rect>`);
      parts.push(`<text x="${end + 4}" y="${y + 12}">${esc(bar.phase)}</text></g>`);
    });
    parts.push("</svg>");
    holder.innerHTML = parts.join("");
  }

  function axisLabel(seconds, total) {
    if (total < 20) return `${seconds.toFixed(1)}s`;
    if (total < 600) return `${Math.round(seconds)}s`;
    return seconds < 7200 ? `${Math.round(seconds / 60)}m` : `${(seconds / 3600).toFixed(1)}h`;
  }

  function drawEvents() {
    document.querySelector("#events tbody").innerHTML = view.events.map((e) =>
      `<tr><td>${esc(e.type)}</td><td>${esc(e.reason)}</td><td>${sinceSpan(e.time, e.age)}</td><td>${esc(e.message)}${e.count > 1 ? ` (×${e.count})` : ""}</td></tr>`).join("")
      || `<tr><td colspan="4" class="muted">no events</td></tr>`;
  }

  function select(name) {
    if (selected !== name) openItems = null;
    selected = name;
    for (const g of document.querySelectorAll(".node.selected")) g.classList.remove("selected");
    const g = document.getElementById(`node-${name}`);
    if (g) g.classList.add("selected");
    drawPanel();
  }

  const dag = document.getElementById("dag");
  dag.addEventListener("click", (event) => {
    const g = event.target.closest(".node");
    if (g) { g.focus({preventScroll: true}); select(g.dataset.flow); }
  });
  dag.addEventListener("keydown", (event) => {
    const g = event.target.closest(".node");
    if (!g) return;
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(g.dataset.flow); }
  });

  for (const button of document.querySelectorAll(".actions button")) {
    button.addEventListener("click", () => {
      // Stop and Terminate abort what runs: asked once more, as a person would be at a terminal.
      if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
      act(button.dataset.action, {});
    });
  }

  drawLegend();
  live(`/stream?namespace=${encodeURIComponent(config.namespace)}&name=${encodeURIComponent(config.name)}`, (next) => {
    if (next.missing) {
      document.getElementById("summary").innerHTML = `<h1>${esc(config.namespace)}/${esc(config.name)}</h1><p>No such JobFlow (yet): it shows here as soon as it exists.</p>`;
      return false;  // not the JobFlow's view: the page is not "rendered" yet
    }
    view = next;
    drawSummary(); drawDag(); drawTimeline(); drawEvents();
    if (selected) drawPanel();
    if (openItems && selected) loadItems(selected);
  });
}

if (config.page === "jobflow") jobflowPage();
// The list is drawn by list.js, the JobTemplate and JobFlowTemplate pages by templates.js, with live() above.
