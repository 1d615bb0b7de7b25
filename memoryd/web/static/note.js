// A note: its markdown rendered (notemd.js: raw HTML off, Obsidian's links and comments; then
// DOMPurify: a note is untrusted input), its headings, links and backlinks, and a link that
// opens the file in Obsidian or the editor.
"use strict";
(() => {
  const { el, get, params, noteLink, failed, query } = M;
  const main = document.getElementById("main");
  // the ids this page gives its own parts: a heading never takes one
  const PAGE_IDS = ["note-body", "open-editor", "headings", "links", "backlinks", "backlinks-more",
    "notes", "notes-count", "more-notes"];
  const path = params().get("path");
  if (!path) { pick(); return; }

  // every note, 200 at a time: "More notes" goes on after the last path shown (the answer's
  // next_cursor), so notes written or deleted meanwhile neither repeat nor go missing
  async function pick() {
    const head = el("p", { class: "muted", id: "notes-count" });
    const list = el("ul", { id: "notes" });
    const more = el("button", { id: "more-notes", hidden: true, onclick: () => page() }, "More notes");
    main.append(el("h1", {}, "Notes"), head, list, more);
    let cursor = null;
    let shown = 0;
    async function page() {
      try {
        const res = await get("/api/notes", cursor ? { limit: 200, cursor } : { limit: 200 });
        list.append(...res.items.map((n) => el("li", {}, noteLink(n.path, n.title || n.path))));
        shown += res.items.length;
        cursor = res.next_cursor || null;
        head.textContent = `${res.total} indexed notes${cursor ? ` (${shown} shown)` : ""}:`;
        more.hidden = !cursor;
      } catch (err) { failed(head, err); }
    }
    await page();
  }

  function frontMatter(text) {
    const m = /^---\r?\n([\s\S]*?)\r?\n(---|\.\.\.)\r?\n/.exec(text);
    return m ? [m[1], text.slice(m[0].length)] : [null, text];
  }

  async function show() {
    let note;
    try { note = await get("/api/note", { path }); } catch (err) { failed(main, err); return; }
    document.title = `${note.path} · memoryd`;
    const resolved = new Map(note.links.filter((l) => l.path).map((l) => [l.target, l.path]));
    const [meta, body] = frontMatter(note.content);
    const html = NoteMarkdown.create(window.markdownit, resolved, note.path).render(body);
    const clean = DOMPurify.sanitize(html, { USE_PROFILE: { html: true }, FORBID_TAGS: ["style", "form", "input"], FORBID_ATTR: ["style"] });
    const article = el("article", { class: "note-body", id: "note-body" });
    article.innerHTML = clean; // sanitised above; raw HTML in the note was never rendered
    for (const a of article.querySelectorAll("a[href]")) {
      const href = a.getAttribute("href");
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) { a.rel = "noopener noreferrer"; a.target = "_blank"; }
      else {
        const local = NoteMarkdown.localHref(href, resolved);
        if (local) a.setAttribute("href", local);
      }
    }
    // heading ids unique on the page (the second "Setup" is setup-1; a heading "Links" is
    // links-1 beside the page's own #links); a link to #setup goes to the first "Setup"
    const headings = [...article.querySelectorAll("h1,h2,h3,h4,h5,h6")];
    const taken = [...document.querySelectorAll("[id]"), ...article.querySelectorAll("[id]")]
      .map((e) => e.id).concat(PAGE_IDS);
    const { ids, first } = NoteMarkdown.headingIds(headings.map((h) => h.textContent), taken);
    headings.forEach((h, i) => { h.id = ids[i]; });
    for (const a of article.querySelectorAll('a[href^="#"]')) {
      const to = first.get(a.getAttribute("href").slice(1));
      if (to) a.setAttribute("href", `#${to}`);
    }
    // the first page of backlinks came with the note; "Show more" asks for the next after the
    // last shown (the answer's next_cursor): notes written meanwhile neither repeat nor go missing
    const backlink = (b) => el("li", {}, noteLink(b.path), el("span", { class: "small muted" }, ` line ${b.line}`));
    const backlinks = el("ul", { id: "backlinks" }, note.backlinks.map(backlink));
    let cursor = note.backlinks_cursor || null;
    const backlinksMore = el("button", { id: "backlinks-more", hidden: !cursor, onclick: () => more() }, "Show more");
    async function more() {
      try {
        const res = await get("/api/backlinks", { path: note.path, cursor });
        backlinks.append(...res.backlinks.map(backlink));
        cursor = res.next_cursor || null;
        backlinksMore.hidden = !cursor;
      } catch (err) { failed(backlinksMore, err); }
    }
    const openHref = note.vault
      ? "obsidian://open?" + new URLSearchParams({ vault: note.vault, file: note.path.replace(/\.md$/i, "") }).toString()
      : "file://" + note.file.split("/").map(encodeURIComponent).join("/");
    const side = el("aside", { class: "note-side" },
      el("div", {}, el("a", { href: openHref, id: "open-editor" }, note.vault ? "Open in Obsidian" : "Open the file"),
        el("div", { class: "small muted" }, note.file)),
      el("div", {}, el("a", { href: "/graph" + query({ path: note.path }) }, "Graph of its neighbourhood")),
      el("h3", {}, "Headings"),
      el("ul", { id: "headings" }, headings.map((h) => el("li", { style: null, class: `lvl-${h.tagName}` }, el("a", { href: `#${h.id}` }, h.textContent)))),
      el("h3", {}, `Links (${note.links_total ?? note.links.length})`),
      el("ul", { id: "links" }, note.links.map((l) => el("li", {},
        l.path ? noteLink(l.path) : el("span", { class: "bad", title: "no such note or file" }, l.target),
        el("span", { class: "small muted" }, ` line ${l.line}${l.embed ? " · embed" : ""}`)))),
      el("h3", {}, `Backlinks (${note.backlinks_total})`),
      backlinks, backlinksMore,
    );
    main.replaceChildren(
      el("h1", {}, note.path),
      el("div", { class: "small muted" }, `${note.size} bytes · modified ${M.when(note.mtime)} · sha256 ${String(note.sha256).slice(0, 12)}…`),
      el("div", { class: "note-layout" },
        el("div", {}, meta ? el("pre", { class: "small muted", title: "front matter" }, meta) : null, article),
        side));
    if (location.hash) {
      let wanted = location.hash.slice(1);
      try { wanted = decodeURIComponent(wanted); } catch (e) { /* as written */ }
      document.getElementById(first.get(wanted) ?? wanted)?.scrollIntoView();
    }
  }
  show();
})();
