// memoryd web page: helpers every page shares. No framework: the DOM is built with el(), and
// text from the daemon (notes, memories: untrusted) only ever goes in as text nodes.
"use strict";

const M = (() => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  async function answer(resp) {
    let data = null;
    try { data = await resp.json(); } catch (e) { /* not JSON */ }
    if (!resp.ok) {
      const msg = (data && data.error && data.error.message) || `${resp.status} ${resp.statusText}`;
      const err = new Error(msg);
      err.status = resp.status;
      err.data = (data && data.error && data.error.data) || null;
      throw err;
    }
    return data;
  }

  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== null && v !== undefined && v !== "") q.set(k, v);
    }
    const s = q.toString();
    return s ? `?${s}` : "";
  }

  const GONE = "memoryd does not answer here: the daemon stopped, or restarted on another port. " +
    "Start it if needed, then run `memoryctl open` for a new link.";
  // fetch, with the failure a browser words as "Failed to fetch" or "NetworkError when
  // attempting to fetch resource" said plainly: nothing answers at this page's address
  async function send(url, init) {
    try { return await fetch(url, init); } catch (err) {
      if (err && err.name === "AbortError") throw err; // the page itself let go of it
      throw new Error(GONE);
    }
  }

  async function get(path, params, opts) {
    return answer(await send(path + query(params), {
      credentials: "same-origin", signal: opts && opts.signal,
    }));
  }

  async function post(path, body) {
    return answer(await send(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    }));
  }

  function params() { return new URLSearchParams(location.search); }

  function setParams(values) {
    const url = location.pathname + query(values);
    if (url !== location.pathname + location.search) history.replaceState(null, "", url);
  }

  function debounce(fn, ms) {
    let t = null;
    return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
  }

  // snippet text with its highlight ranges (code-point offsets) as <mark>
  function highlighted(text, ranges) {
    const chars = Array.from(text || "");
    const frag = document.createDocumentFragment();
    let at = 0;
    for (const [a, b] of (ranges || []).slice().sort((x, y) => x[0] - y[0])) {
      if (a < at) continue;
      frag.append(chars.slice(at, a).join(""));
      frag.append(el("mark", {}, chars.slice(a, b).join("")));
      at = b;
    }
    frag.append(chars.slice(at).join(""));
    return frag;
  }

  function when(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  function day(iso) {
    const d = new Date(iso);
    return d.toLocaleDateString(undefined, { weekday: "short", year: "numeric", month: "short", day: "numeric" });
  }

  function duration(s) {
    if (s === null || s === undefined) return "–";
    if (s < 60) return `${Math.round(s)} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
    return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  }

  let toastTimer = null;
  function toast(message, action) {
    const box = document.getElementById("toast");
    box.replaceChildren(el("span", {}, message));
    if (action) box.append(el("button", { onclick: () => { box.hidden = true; action.run(); } }, action.label));
    box.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { box.hidden = true; }, action ? 10000 : 4000);
  }

  function failed(where, err) {
    where.replaceChildren(el("p", { class: "error" }, err.message || String(err)));
  }

  function noteLink(path, label) {
    return el("a", { href: "/note" + query({ path }) }, label || path);
  }

  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === document.body.dataset.page) a.classList.add("active");
  }

  return { el, get, post, params, setParams, debounce, highlighted, when, day, duration, toast, failed, noteLink, query };
})();
