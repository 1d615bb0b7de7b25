// Runs a page of the web UI (memoryd/web/static/*.js) under node with a minimal DOM, no
// browser: `node tests/webdom.js PAGE ANSWERS.json [SEARCH] [CLICK...]`. ANSWERS maps an API
// path to its JSON answer, or to {"__pages__": [...]} for one answer per request in turn; each
// `get` of the page is answered from it. SEARCH is the page's `location.search`; each CLICK, an
// element id, is clicked once the page settled (the graph's "more"). Cytoscape is a stub that
// keeps the elements it was given. Prints one JSON object: the page's text by element id
// ({"attention": "...", ...}), the whole text, every <dt> (a key shown), the ids of the elements
// hidden and the URLs fetched.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");

const [page, answersFile, search = "", ...clicks] = process.argv.slice(2);
const answers = JSON.parse(fs.readFileSync(answersFile, "utf8"));
const STATIC = path.join(__dirname, "..", "memoryd", "web", "static");

class Node {}
class Text extends Node {
  constructor(text) { super(); this.data = String(text); this.children = []; }
  get textContent() { return this.data; }
}
class Element extends Node {
  constructor(tag) {
    super();
    this.tagName = tag.toUpperCase();
    this.children = [];
    this.attributes = {};
    this.dataset = {};
    this.style = {};
    this.className = "";
    this.classList = { add: (c) => { this.className += ` ${c}`; } };
  }
  set textContent(v) { this.children = [new Text(v)]; }
  get textContent() { return this.children.map((c) => c.textContent).join(""); }
  setAttribute(k, v) { this.attributes[k] = v; }
  get value() { return this.attributes.value ?? ""; } // a form field's value, as its attribute
  set value(v) { this.attributes.value = String(v); }
  get hidden() { return "hidden" in this.attributes; } // the property reflects the attribute
  set hidden(v) { if (v) this.attributes.hidden = ""; else delete this.attributes.hidden; }
  getAttribute(k) { return this.attributes[k]; }
  get id() { return this.attributes.id; }
  addEventListener(kind, fn) { if (kind === "click") this.onclickFn = fn; }
  append(...nodes) {
    for (const n of nodes) this.children.push(n instanceof Node ? n : new Text(n));
  }
  replaceChildren(...nodes) { this.children = []; this.append(...nodes); }
  querySelectorAll() { return []; }
  getContext() { return new Proxy({}, { get: () => () => {}, set: () => true }); }
  walk(fn) { fn(this); for (const c of this.children) if (c instanceof Element) c.walk(fn); }
}
class Fragment extends Element { constructor() { super("#fragment"); } }

const body = new Element("body");
body.dataset.page = page;
const main = new Element("main");
main.setAttribute("id", "main");
const toast = new Element("div");
toast.setAttribute("id", "toast");
body.append(main, toast);
const byId = (id) => { let found = null; body.walk((e) => { if (!found && e.id === id) found = e; }); return found; };

const document = {
  body,
  head: new Element("head"),
  hidden: true, // one poll, no timer
  createElement: (tag) => new Element(tag),
  createTextNode: (text) => new Text(text),
  createDocumentFragment: () => new Fragment(),
  getElementById: byId,
  querySelector: () => ({ content: "csrf" }),
  querySelectorAll: () => [],
  addEventListener() {},
};
let pending = 0;
const fetched = [];
const served = {};
const fetch = async (url) => {
  pending += 1;
  fetched.push(url);
  const key = url.split("?")[0];
  let data = answers[key];
  if (data && data.__pages__) data = data.__pages__[(served[key] = (served[key] || 0) + 1) - 1];
  pending -= 1;
  return { ok: data !== undefined, status: data === undefined ? 404 : 200, statusText: "", json: async () => data };
};
const context = vm.createContext({
  document, fetch, Node, console, URLSearchParams, Date, Math, JSON, Object, Array, Number, String,
  Promise, Proxy, setTimeout: () => 0, clearTimeout: () => {}, matchMedia: () => ({ matches: false }),
  location: { search, pathname: `/${page}` }, history: { replaceState() {} },
  performance: { now: () => 0 }, window: {}, cytoscape: (opts) => {
    const graph = { opts, on() {}, destroy() {} };
    context.drawn = opts.elements.length;
    return graph;
  },
});
for (const name of ["common.js", `${page}.js`]) {
  vm.runInContext(fs.readFileSync(path.join(STATIC, name), "utf8"), context, { filename: name });
}
setTimeout(() => {}, 0);
const settle = (then, n = 0) => setImmediate(() => (n < 20 ? settle(then, n + 1) : then()));
settle(function click() {
  const id = clicks.shift();
  if (id === undefined) return done();
  const target = byId(id);
  if (!target || !target.onclickFn) {
    process.stderr.write(`webdom: no element #${id} to click\n`);
    process.exit(3);
  }
  target.onclickFn();
  settle(click);
});
function done(n = 0) {
  if (pending && n < 100) return setImmediate(() => done(n + 1));
  const ids = {};
  const dts = [];
  const hidden = [];
  main.walk((e) => {
    if (e.id) ids[e.id] = e.textContent;
    if (e.id && e.hidden) hidden.push(e.id);
    if (e.tagName === "DT") dts.push(e.textContent);
  });
  const errors = [];
  main.walk((e) => { if (e.className === "error") errors.push(e.textContent); });
  process.stdout.write(JSON.stringify({ ids, text: main.textContent, dts, errors, hidden, fetched }));
}
