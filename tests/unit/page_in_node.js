// One page of the dashboard in node, without a browser, for tests/unit/test_dashboard_action_buttons.py: the
// page's own scripts (dashboard/static/dashboard.js, then templates.js) run against a small stand-in of the DOM,
// of fetch and of EventSource, so a test can click, send views and answer (or fail) each request itself.
//
// Usage: node page_in_node.js STATIC_DIR CONFIG_JSON < SCENARIO. The scenario is the body of an async function
// with el, click, submit, view, pick, fetches and settle in scope; what it returns is printed as JSON.
//
// The stand-in knows what these scripts use: elements by id (a few drawn in advance, as the page's HTML has them;
// the <input> and <button> of an innerHTML are made elements too, with their id, name, value, data-* and
// disabled), listeners, and the handful of selectors the scripts ask for.
"use strict";

const fs = require("fs");
const path = require("path");
const vm = require("vm");

const [staticDir, configText] = process.argv.slice(2);
const config = JSON.parse(configText);
const byId = new Map();

class Element {
  constructor(id, tag = "div", attributes = {}) {
    this.id = id;
    this.tagName = tag.toUpperCase();
    this.dataset = {};
    this.listeners = {};
    this.children = [];
    this.disabled = "disabled" in attributes;
    this.hidden = false;
    this.type = attributes.type || "";
    this.name = attributes.name || "";
    this.value = attributes.value || "";
    this.textContent = "";
    this.html = "";
    this.classList = {add() {}, remove() {}};
    for (const [key, value] of Object.entries(attributes)) {
      if (key.startsWith("data-")) this.dataset[key.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = value;
    }
    if (id) byId.set(id, this);
  }

  set innerHTML(html) {
    for (const old of this.children) if (byId.get(old.id) === old) byId.delete(old.id);
    this.html = html;
    this.children = [...html.matchAll(/<(input|button)\b([^>]*)>/g)].map(([, tag, rest]) => {
      const attributes = {};
      for (const [, key, value] of rest.matchAll(/([\w-]+)(?:="([^"]*)")?/g)) attributes[key] = value ?? "";
      return new Element(attributes.id || "", tag, attributes);
    });
  }

  get innerHTML() { return this.html; }
  addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
  dispatch(type) {
    for (const listener of this.listeners[type] || []) listener({type, target: this, preventDefault() {}});
  }
  querySelectorAll(selector) { return matching(this.children, selector); }
  contains(other) { return other === this || this.children.includes(other); }
  focus() {}
  closest() { return null; }
}

function matching(elements, selector) {
  const rules = {
    "input": (e) => e.tagName === "INPUT",
    "button": (e) => e.tagName === "BUTTON",
    "button[data-action]": (e) => e.tagName === "BUTTON" && e.dataset.action !== undefined,
    "button[type=button]": (e) => e.tagName === "BUTTON" && e.type === "button",
  };
  if (!(selector in rules)) throw new Error(`page_in_node.js knows no selector ${selector}`);
  return elements.filter(rules[selector]);
}

// The page's HTML, as far as the scripts read it (dashboard/templates/*.html).
const drawn = ["live", "summary", "dag", "timeline", "legend", "panel", "facts", "parameters", "action-result",
  "used-by", "events-body", "runs-body", "recent-body"];
for (const id of drawn) new Element(id);
new Element("config").textContent = JSON.stringify(config);
const button = (action, type = "button") =>
  new Element(`action-${action}`, "button", {type, "data-action": action, disabled: ""});
let groups = {};
if (config.page === "jobflow") {
  groups = {".actions button": ["retry", "suspend", "resume", "stop", "terminate"].map((a) => button(a))};
  groups[".actions button"][3].dataset.confirm = "Stop?";
} else if (config.page === "jobflowtemplate") {
  const form = new Element("run-form", "form");
  form.children = [button("run", "submit"), button("suspend"), button("resume")];
  groups = {"#run-form button": form.children};
}

const document = {
  hidden: false,
  activeElement: null,
  body: {dataset: {}},
  getElementById: (id) => byId.get(id) || null,
  querySelector(selector) {
    const bodies = {"#events tbody": "events-body", "#runs tbody": "runs-body", "#recent tbody": "recent-body"};
    return byId.get(bodies[selector]);
  },
  querySelectorAll(selector) {
    if (selector in groups) return groups[selector];
    if (selector === "#gate button") return ["gate-approve", "gate-reject"].map((id) => byId.get(id)).filter(Boolean);
    if (selector === "[data-since]" || selector === ".node.selected") return [];
    return matching([...byId.values()], selector);
  },
  addEventListener() {},
};

const fetches = [];
function fetch(url, options = {}) {
  return new Promise((resolve, reject) => {
    fetches.push({
      url, method: options.method || "GET", body: options.body ? JSON.parse(options.body) : null,
      answer: (status, json) => resolve({ok: status < 400, status, statusText: "",
        json: async () => { if (json === undefined) throw new SyntaxError("not JSON"); return json; }}),
      fail: (message) => reject(new TypeError(message)),
    });
  });
}

const streams = [];
class EventSource {
  constructor(url) { this.url = url; this.listeners = {}; streams.push(this); }
  addEventListener(type, listener) { this.listeners[type] = listener; }
  close() {}
}

const context = vm.createContext({
  document, fetch, EventSource, console, JSON, Math, Date, Number, String, Boolean, Object, Array, Map, Set, Promise,
  URLSearchParams, encodeURIComponent, setTimeout, clearTimeout, setInterval: () => 0,
  requestAnimationFrame: (callback) => setTimeout(callback, 0), performance: {now: () => Date.now()},
  window: {confirm: () => true},
});
for (const script of ["dashboard.js", "templates.js"]) {
  vm.runInContext(fs.readFileSync(path.join(staticDir, script), "utf8"), context, {filename: script});
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
const page = {
  el: (id) => byId.get(id) || null,
  click: async (id) => { byId.get(id).dispatch("click"); await settle(); },
  submit: async () => { byId.get("run-form").dispatch("submit"); await settle(); },
  view: async (view) => { streams.at(-1).listeners.view({data: JSON.stringify(view)}); await settle(); },
  pick: async (flow) => {  // a click on a flow's node of the DAG (dashboard.js asks the event for its .node)
    const node = {dataset: {flow}, focus() {}};
    for (const listener of byId.get("dag").listeners.click) listener({target: {closest: () => node}});
    await settle();
  },
  fetches, settle,
};

const scenario = fs.readFileSync(0, "utf8");
const run = new Function(...Object.keys(page), `return (async () => {\n${scenario}\n})();`);
run(...Object.values(page)).then(
  (result) => { process.stdout.write(JSON.stringify(result)); process.exit(0); },
  (error) => { process.stderr.write(`${error.stack || error}\n`); process.exit(1); });
