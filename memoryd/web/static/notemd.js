// A note's markdown as Obsidian shows it, on top of markdown-it (raw HTML off): [[wikilinks]]
// and ![[embeds]] with their #heading, #^block and |alias, and [markdown](links.md#heading),
// linked to the note the daemon resolved (to the heading's anchor); %%comments%% and <!-- comments --> hidden, inline or over several paragraphs (a mark
// never closed, or one in code, is text). No DOM: tests/test_web_notemd.py runs it in node.
"use strict";

const NoteMarkdown = (() => {
  const COMMENTS = [["%%", "%%"], ["<!--", "-->"]];

  // an id for a heading: the page gives each rendered heading this id, so a link's #heading
  // and the page's own anchors agree
  // a heading's id; with `used` (the ids given so far), one not given yet, as GitHub and
  // Obsidian make it: the second "Setup" is setup-1, the third setup-2
  function slug(text, used) {
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-|-$/g, "") || "h";
    if (!used) return base;
    let s = base;
    for (let n = 1; used.has(s); n++) s = `${base}-${n}`;
    used.add(s);
    return s;
  }

  // the ids of a note's headings (their texts, in order), unique on the page: none is an id
  // `taken` (the page's own: a heading "Links" beside the list of links is links-1) nor
  // another heading's. `first`: a slug -> the id of the first heading with it, where a link
  // to #slug goes (main gave two "Setup"s one id: a link to the second reached the first)
  function headingIds(texts, taken) {
    const used = new Set(taken);
    const first = new Map();
    const ids = texts.map((text) => {
      const id = slug(text, used);
      if (!first.has(slug(text))) first.set(slug(text), id);
      return id;
    });
    return { ids, first };
  }

  // [[target#heading|alias]] -> its parts; `\|` (a link in a table) is a bar
  function parseLink(inner) {
    const text = inner.replace(/\\\|/g, "|");
    const bar = text.indexOf("|");
    const link = bar < 0 ? text : text.slice(0, bar);
    let alias = bar < 0 ? null : text.slice(bar + 1).trim() || null;
    if (alias && /^\d+(x\d+)?$/.test(alias)) alias = null; // ![[image.png|300]]: a size, no name
    const hash = link.indexOf("#");
    const target = (hash < 0 ? link : link.slice(0, hash)).trim();
    const parts = hash < 0 ? [] : link.slice(hash + 1).split("#").map((p) => p.trim()).filter(Boolean);
    const last = parts.length ? parts[parts.length - 1] : null;
    const block = last && last.startsWith("^") ? last.slice(1) : null;
    return { target, heading: block ? null : last, block, alias };
  }

  // text with its code spans blanked: a comment mark inside `code` is code
  function withoutCode(text) {
    return text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (m) => " ".repeat(m.length));
  }

  // the text with its comments cut out (within one paragraph or heading)
  function stripComments(text) {
    const plain = withoutCode(text);
    let out = "";
    let at = 0;
    for (;;) {
      let best = null;
      for (const [open, close] of COMMENTS) {
        const i = plain.indexOf(open, at);
        if (i < 0) continue;
        const j = plain.indexOf(close, i + open.length);
        if (j >= 0 && (!best || i < best[0])) best = [i, j + close.length];
      }
      if (!best) return out + text.slice(at);
      out += text.slice(at, best[0]);
      at = best[1];
    }
  }

  // a comment or a $$math$$ block that opens a block and closes on a later line (blank lines in
  // it too): a comment is hidden, math shown as it is written (no heading, list or link in it)
  function blockRule(pairs, shown) {
    return (state, startLine, endLine, silent) => {
      if (state.sCount[startLine] - state.blkIndent >= 4) return false;
      const start = state.bMarks[startLine] + state.tShift[startLine];
      const pair = pairs.find(([open]) => state.src.startsWith(open, start));
      if (!pair) return false;
      const [open, close] = pair;
      let line = startLine;
      let pos = start + open.length;
      for (;;) {
        const end = state.eMarks[line];
        const found = withoutCode(state.src.slice(pos, end)).indexOf(close);
        if (found >= 0) {
          if (state.src.slice(pos + found + close.length, end).trim()) return false; // text after
          break;
        }
        line += 1;
        if (line >= endLine) return false; // never closed: text
        pos = state.bMarks[line];
      }
      if (line === startLine && !shown) return false; // one line: the paragraph's rule hides it
      if (silent) return true;
      if (shown) {
        const tok = state.push("code_block", "code", 0);
        tok.content = state.getLines(startLine, line + 1, state.blkIndent, true);
        tok.map = [startLine, line + 1];
      }
      state.line = line + 1;
      return true;
    };
  }

  function create(markdownit, resolved, notePath) {
    const md = markdownit({ html: false, linkify: false, typographer: false });
    const alt = { alt: ["paragraph", "reference", "blockquote", "list"] };
    md.block.ruler.before("fence", "obsidian_comment", blockRule(COMMENTS, false), alt);
    md.block.ruler.before("fence", "obsidian_math", blockRule([["$$", "$$"]], true), alt);
    md.core.ruler.after("block", "obsidian_inline_comment", (state) => {
      for (const tok of state.tokens) {
        if (tok.type === "inline" && (tok.content.includes("%%") || tok.content.includes("<!--"))) {
          tok.content = stripComments(tok.content);
        }
      }
    });
    md.core.ruler.after("block", "obsidian_callout", (state) => {
      const toks = state.tokens;
      for (let i = 0; i + 2 < toks.length; i++) {
        if (toks[i].type !== "blockquote_open" || toks[i + 1].type !== "paragraph_open") continue;
        const inline = toks[i + 2];
        const m = /^\[!([\w-]+)\]([+-]?)[ \t]*(.*)$/m.exec(inline.content.split("\n")[0]);
        if (!m) continue;
        const kind = m[1].toLowerCase();
        toks[i].attrJoin("class", `callout callout-${kind}`);
        const title = m[3].trim() || kind.charAt(0).toUpperCase() + kind.slice(1);
        const rest = inline.content.split("\n").slice(1).join("\n");
        inline.content = `**${title}**` + (rest ? "\n" + rest : "");
      }
    });
    md.core.ruler.after("block", "obsidian_task", (state) => {
      const toks = state.tokens;
      for (let i = 2; i < toks.length; i++) {
        if (toks[i].type !== "inline" || toks[i - 2].type !== "list_item_open") continue;
        const m = /^\[([ xX])\][ \t]/.exec(toks[i].content);
        if (m) toks[i].content = (m[1] === " " ? "☐ " : "☑ ") + toks[i].content.slice(m[0].length);
      }
    });
    md.inline.ruler.before("emphasis", "highlight", (state, silent) => {
      const src = state.src;
      const start = state.pos;
      if (!src.startsWith("==", start) || /[\s=]/.test(src.charAt(start + 2) || " ")) return false;
      const end = src.indexOf("==", start + 2);
      if (end < 0 || end > state.posMax || /\s/.test(src.charAt(end - 1))) return false;
      if (src.slice(start, end).includes("`")) return false; // a code span in between: text
      if (!silent) {
        state.push("mark_open", "mark", 1);
        const max = state.posMax;
        state.pos = start + 2;
        state.posMax = end;
        state.md.inline.tokenize(state);
        state.posMax = max;
        state.push("mark_close", "mark", -1);
      }
      state.pos = end + 2;
      return true;
    });
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
        const tok = state.push("wikilink", "", 0);
        tok.meta = { ...parseLink(inner), embed };
      }
      state.pos = end + 2;
      return true;
    });
    md.renderer.rules.wikilink = (tokens, idx) => {
      const { target, heading, block, alias, embed } = tokens[idx].meta;
      const esc = md.utils.escapeHtml;
      const shown = target ? [target, heading || (block && `^${block}`)] : [heading || (block && `^${block}`)];
      const label = esc(alias || shown.filter(Boolean).join(" › "));
      const file = target ? resolved.get(target) : notePath;
      const cls = `wikilink${embed ? " embed" : ""}`;
      if (!file) return `<span class="${cls} missing" title="no such note">${label}</span>`;
      const anchor = heading ? `#${slug(heading)}` : "";
      const href = file === notePath && !target ? anchor || "#" : `/note${esc(query({ path: file }))}${anchor}`;
      return `<a class="${cls}" href="${href}">${embed ? "⤷ " : ""}${label}</a>`;
    };
    return md;
  }

  // a markdown link to a note ([text](Other%20note.md#Some%20heading)) as the page's link to
  // it, else null
  function localHref(href, resolved) {
    let raw;
    try { raw = decodeURI(href); } catch (e) { return null; }
    const cut = raw.indexOf("#");
    const file = resolved.get(cut < 0 ? raw : raw.slice(0, cut));
    const heading = cut < 0 ? "" : raw.slice(cut + 1).trim();
    if (!file) return null;
    return `/note${query({ path: file })}${heading && !heading.startsWith("^") ? "#" + slug(heading) : ""}`;
  }

  function query(params) {
    return "?" + new URLSearchParams(params).toString();
  }

  return { create, slug, headingIds, parseLink, stripComments, localHref };
})();

if (typeof module !== "undefined") module.exports = NoteMarkdown;
