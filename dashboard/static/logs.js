// The logs pane of a JobFlow's page: a flow's logs, live, as `kubectl jobflow logs NAME FLOW -f` prints them
// (dashboard/logs.py streams them as server-sent events). Opened by a flow panel's Logs button; each line keeps its
// prefix ([flow/item/task/pod/container]), a select shows one container's lines when there are several; for a
// forEach (repeat) flow another asks the server for one item's (iteration's) logs only (&item=N: a wide fan-out
// follows more running containers than a pane may, and is refused until one is chosen); what the command says on stderr (a vcjob deleted with its pods, a flow not started) is shown as a notice. Follow keeps the
// end in view; scrolling up stops it, scrolling back to the end starts it again. Uses esc() and config from
// dashboard.js.
"use strict";

(function logsPane() {
  if (config.page !== "jobflow") return;
  const MAX_LINES = 10000;  // the page keeps the newest; `kubectl jobflow logs` shows them all
  const pane = document.getElementById("logs");
  let flow = null, item = "", source = null, ended = false, dropped = false;

  function open(name, items, iterations) {
    flow = name;
    item = "";
    pane.hidden = false;
    const word = iterations ? "iteration" : "item";
    const choose = items > 0
      ? `<label>Show <select id="logs-item"><option value="">every ${word}</option>${
        Array.from({length: items}, (_, i) => `<option value="${i}">${word} ${i}</option>`).join("")}</select></label>`
      : "";
    pane.innerHTML = `<div class="logs-head"><h2 id="logs-title">Logs of flow <code>${esc(name)}</code></h2>${choose}` +
      `<label hidden>Show <select id="logs-filter"><option value="">every container</option></select></label>` +
      `<label><input type="checkbox" id="logs-follow" checked> Follow (keep the end in view)</label>` +
      `<span id="logs-state" class="live" role="status" aria-live="polite">connecting…</span>` +
      `<button type="button" id="logs-close">Close</button></div>` +
      `<ul id="logs-notices" class="logs-notices" aria-label="notices"></ul>` +
      `<pre id="logs-lines" class="logs-lines" tabindex="0" aria-label="log lines of flow ${esc(name)}" data-lines="0"></pre>`;
    document.getElementById("logs-close").addEventListener("click", close);
    document.getElementById("logs-filter").addEventListener("change", filter);
    const chooser = document.getElementById("logs-item");
    if (chooser) chooser.addEventListener("change", () => { item = chooser.value; if (config.logs) connect(); });
    const lines = document.getElementById("logs-lines");
    lines.addEventListener("scroll", () => {
      document.getElementById("logs-follow").checked = lines.scrollTop + lines.clientHeight >= lines.scrollHeight - 4;
    });
    document.getElementById("logs-follow").addEventListener("change", (event) => { if (event.target.checked) toEnd(); });
    if (!config.logs) {
      notice(`This dashboard shows no logs: in the cluster it reads as its ServiceAccount, and logs may hold secrets. ` +
        `Its operator turns them on with --logs (docs/dashboard.md, "Logs"). Meanwhile: kubectl jobflow logs ` +
        `${config.name} ${name} -n ${config.namespace} -f`, "off");
      say("logs off", false);
      return;
    }
    connect();
    document.getElementById("logs-title").scrollIntoView({block: "nearest"});
  }

  function url() {
    return `/api/jobflows/${encodeURIComponent(config.namespace)}/${encodeURIComponent(config.name)}/logs?flow=${encodeURIComponent(flow)}` +
      (item === "" ? "" : `&item=${encodeURIComponent(item)}`);
  }

  // The server sends each container's last lines first, on every connection: a new one starts the pane afresh.
  function connect() {
    if (source) source.close();
    ended = false;
    const filter = document.getElementById("logs-filter");  // another item's containers are not this one's
    filter.length = 1;
    filter.parentElement.hidden = true;
    source = new EventSource(url());
    source.onopen = () => { clear(); say("live", true); };
    source.addEventListener("lines", (event) => append(JSON.parse(event.data)));
    source.addEventListener("notice", (event) => notice(JSON.parse(event.data).text, "notice"));
    source.addEventListener("end", (event) => finish(JSON.parse(event.data).text, "ended", true));
    source.addEventListener("problem", (event) => finish(JSON.parse(event.data).error, "failed", false));
    source.onerror = () => {
      if (ended) return;
      if (source.readyState !== EventSource.CLOSED) { say("reconnecting…", false); return; }
      // Refused (403, 429, 400): an EventSource does not say why; one plain request does.
      fetch(url()).then((answer) => answer.ok ? (answer.body && answer.body.cancel(), "") : answer.json())
        .then((said) => finish((said && said.error) || "the logs stream closed: close the pane and open it again", "failed", false))
        .catch(() => finish("the dashboard cannot be reached", "failed", false));
    };
  }

  function finish(text, state, good) {
    ended = true;
    if (source) { source.close(); source = null; }
    notice(text, good ? "end" : "problem");
    say(state, good);
  }

  function close() {
    ended = true;
    if (source) { source.close(); source = null; }
    flow = null;
    pane.hidden = true;
    pane.innerHTML = "";
  }

  function say(text, on) {
    const state = document.getElementById("logs-state");
    if (state) { state.textContent = text; state.className = `live ${on ? "on" : "off"}`; }
  }

  function clear() {
    document.getElementById("logs-lines").textContent = "";
    document.getElementById("logs-lines").dataset.lines = "0";
    document.getElementById("logs-notices").textContent = "";
    dropped = false;
  }

  function notice(text, kind) {
    const item = document.createElement("li");
    item.className = `logs-notice ${kind}`;
    item.textContent = `${kind === "problem" ? "✗ " : kind === "end" ? "■ " : "ℹ "}${text}`;
    document.getElementById("logs-notices").append(item);
  }

  function append(lines) {
    const holder = document.getElementById("logs-lines"), select = document.getElementById("logs-filter");
    const shown = select.value, known = new Set([...select.options].map((o) => o.value));
    const fragment = document.createDocumentFragment();
    for (const line of lines) {
      const key = `${line.pod}/${line.container}`;
      if (!known.has(key)) {
        known.add(key);
        select.append(new Option(line.prefix, key));
      }
      const row = document.createElement("span");
      row.className = "log-line";
      row.dataset.stream = key;
      row.hidden = shown !== "" && shown !== key;
      const prefix = document.createElement("span");
      prefix.className = "log-prefix";
      prefix.textContent = line.prefix;
      row.append(prefix, ` ${line.text}\n`);
      if (line.time) row.title = line.time;
      fragment.append(row);
    }
    holder.append(fragment);
    let count = Number(holder.dataset.lines) + lines.length;
    while (count > MAX_LINES) { holder.firstChild.remove(); count -= 1; dropped = true; }
    holder.dataset.lines = String(count);
    if (dropped && !document.getElementById("logs-dropped")) {
      const item = document.createElement("li");
      item.id = "logs-dropped";
      item.className = "logs-notice notice";
      item.textContent = `ℹ the pane keeps the last ${MAX_LINES} lines: kubectl jobflow logs ${config.name} ${flow} shows them all`;
      document.getElementById("logs-notices").append(item);
    }
    select.parentElement.hidden = select.options.length <= 2;  // "every container" and the one there is
    if (document.getElementById("logs-follow").checked) toEnd();
  }

  function filter() {
    const shown = document.getElementById("logs-filter").value;
    for (const row of document.querySelectorAll("#logs-lines .log-line")) row.hidden = shown !== "" && row.dataset.stream !== shown;
    toEnd();
  }

  function toEnd() {
    const holder = document.getElementById("logs-lines");
    holder.scrollTop = holder.scrollHeight;
  }

  // As the page's own stream: closed while the tab is hidden (a browser keeps 6 connections per host), opened
  // again when shown, which sends the last lines again.
  document.addEventListener("visibilitychange", () => {
    if (!flow || ended || !config.logs) return;
    if (document.hidden && source) { source.close(); source = null; say("paused while hidden", false); }
    if (!document.hidden && !source) connect();
  });

  document.getElementById("panel").addEventListener("click", (event) => {
    const button = event.target.closest("#show-logs");
    if (button) open(button.dataset.flow, Number(button.dataset.items || 0), button.dataset.iterations === "1");
  });
})();
