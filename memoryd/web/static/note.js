// A note: its markdown rendered (raw HTML off, then DOMPurify: a note is untrusted input), its
// headings, links and backlinks, and a link that opens the file in Obsidian or the editor.
"use strict";
(() => {
  const { el, get, params, noteLink, failed, query } = M;
  const main = document.getElementById("main");
  const path = params().get("path");
  if (!path) { pick(); return; }

  async function pick() {
    main.append(el("h1", {}, "Notes"));
    const list = el("div", {});
    main.append(list);
    try {
      const res = await get("/api/notes", { limit: 200 });
      list.append(el("p", { class: "muted" }, `${res.total} indexed notes (first 200):`),
        el("ul", {}, res.items.map((n) => el("li", {}, noteLink(n.path, n.title || n.path)))));
    } catch (err) { failed(list, err); }
  }

  function markdown(resolved) {
    const md = window.markdownit({ html: false, linkify: false, typographer: false });
    md.inline.ruler.before("link", "wikilink", (state, silent) => {
      const src = state.src;
      let start = state.pos;
      let embed = false;
      if (src.charCodeAt(start) === 0x21 && src.startsWith("[[", start + 1)) { embed = true; start += 1; }
      else if (!src.startsWith("[[", start)) return false;
      const end = src.indexOf("]]", start + 2);
      if (end < 0) return false;
      const inner = src.slice(start + 2, end);
      if (!inner || inner.includes("\n") || inner.includes("[")) return false;
      if (!silent) {
        const bar = inner.indexOf("|");
        const target = (bar < 0 ? inner : inner.slice(0, bar)).trim();
        const alias = bar < 0 ? null : inner.slice(bar + 1).trim();
        const tok = state.push("wikilink", "", 0);
        tok.meta = { target, alias, embed };
      }
      state.pos = end + 2;
      return true;
    });
    md.renderer.rules.wikilink = (tokens, idx) => {
      const { target, alias, embed } = tokens[idx].meta;
      const esc = md.utils.escapeHtml;
      const label = esc(alias || target);
      const file = resolved.get(target);
      const cls = `wikilink${embed ? " embed" : ""}`;
      if (!file) return `<span class="${cls} missing" title="no such note">${label}</span>`;
      return `<a class="${cls}" href="/note${esc(query({ path: file }))}">${embed ? "⤷ " : ""}${label}</a>`;
    };
    return md;
  }

  function frontMatter(text) {
    const m = /^---\r?\n([\s\S]*?)\r?\n(---|\.\.\.)\r?\n/.exec(text);
    return m ? [m[1], text.slice(m[0].length)] : [null, text];
  }

  function slug(text, used) {
    let s = text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-|-$/g, "") || "h";
    while (used.has(s)) s += "-";
    used.add(s);
    return s;
  }

  async function show() {
    let note;
    try { note = await get("/api/note", { path }); } catch (err) { failed(main, err); return; }
    document.title = `${note.path} · memoryd`;
    const resolved = new Map(note.links.filter((l) => l.path).map((l) => [l.target, l.path]));
    const [meta, body] = frontMatter(note.content);
    const html = markdown(resolved).render(body);
    const clean = DOMPurify.sanitize(html, { USE_PROFILE: { html: true }, FORBID_TAGS: ["style", "form", "input"], FORBID_ATTR: ["style"] });
    const article = el("article", { class: "note-body", id: "note-body" });
    article.innerHTML = clean; // sanitised above; raw HTML in the note was never rendered
    for (const a of article.querySelectorAll("a[href]")) {
      const href = a.getAttribute("href");
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) { a.rel = "noopener noreferrer"; a.target = "_blank"; }
      else if (resolved.has(decodeURI(href))) a.setAttribute("href", "/note" + query({ path: resolved.get(decodeURI(href)) }));
    }
    const used = new Set();
    const headings = [...article.querySelectorAll("h1,h2,h3,h4,h5,h6")].map((h) => {
      h.id = slug(h.textContent, used);
      return h;
    });
    const openHref = note.vault
      ? "obsidian://open?" + new URLSearchParams({ vault: note.vault, file: note.path.replace(/\.md$/i, "") }).toString()
      : "file://" + note.file.split("/").map(encodeURIComponent).join("/");
    const side = el("aside", { class: "note-side" },
      el("div", {}, el("a", { href: openHref, id: "open-editor" }, note.vault ? "Open in Obsidian" : "Open the file"),
        el("div", { class: "small muted" }, note.file)),
      el("div", {}, el("a", { href: "/graph" + query({ path: note.path }) }, "Graph of its neighbourhood")),
      el("h3", {}, "Headings"),
      el("ul", { id: "headings" }, headings.map((h) => el("li", { style: null, class: `lvl-${h.tagName}` }, el("a", { href: `#${h.id}` }, h.textContent)))),
      el("h3", {}, `Links (${note.links.length})`),
      el("ul", { id: "links" }, note.links.map((l) => el("li", {},
        l.path ? noteLink(l.path) : el("span", { class: "bad", title: "no such note or file" }, l.target),
        el("span", { class: "small muted" }, ` line ${l.line}${l.embed ? " · embed" : ""}`)))),
      el("h3", {}, `Backlinks (${note.backlinks.length})`),
      el("ul", { id: "backlinks" }, note.backlinks.map((b) => el("li", {}, noteLink(b.path),
        el("span", { class: "small muted" }, ` line ${b.line}`)))),
    );
    main.replaceChildren(
      el("h1", {}, note.path),
      el("div", { class: "small muted" }, `${note.size} bytes · modified ${M.when(note.mtime)} · sha256 ${String(note.sha256).slice(0, 12)}…`),
      el("div", { class: "note-layout" },
        el("div", {}, meta ? el("pre", { class: "small muted", title: "front matter" }, meta) : null, article),
        side));
    if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  }
  show();
})();
