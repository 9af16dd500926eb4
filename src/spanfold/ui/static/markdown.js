// Markdown as the page shows an assistant's text: headings, paragraphs, lists, quotes, code blocks, tables, rules,
// and inline code, bold, italic, struck-through text and links. Every piece of the text becomes a text node inside
// elements made here: nothing of it is ever parsed as HTML. A link is one only for http(s) and mailto addresses (it
// opens in a new tab without a referrer); an image is named, never loaded.
import { el } from "./dom.js";

// Longer texts are shown as they are (each opening mark looks at most WINDOW characters ahead for its closing one).
export const MARKDOWN_CHARS = 100_000;
const WINDOW = 2000;
const DEPTH = 6;

// Where `needle` is in `text` after `from`, within WINDOW characters of it; -1 when not there.
function find(text, needle, from) {
  const at = text.slice(from, from + WINDOW).indexOf(needle);
  return at < 0 ? -1 : from + at;
}

function safeUrl(url) {
  return /^(https?:\/\/|mailto:)/i.test(url.trim()) ? url.trim() : null;
}

// The inline elements of `text` (a paragraph, a heading, a list item, a table cell).
export function inline(text, depth = 0) {
  const out = [];
  let plain = "";
  const flush = () => { if (plain) { out.push(plain); plain = ""; } };
  const wrapped = (tag, inner) => { flush(); out.push(el(tag, {}, depth < DEPTH ? inline(inner, depth + 1) : inner)); };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\" && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!~|>]/.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      let ticks = 1;
      while (text[i + ticks] === "`") ticks++;
      const fence = "`".repeat(ticks);
      const end = find(text, fence, i + ticks);
      if (end > i) {
        flush();
        out.push(el("code", {}, text.slice(i + ticks, end).replace(/^ (.+) $/, "$1")));
        i = end + ticks;
        continue;
      }
      plain += fence;
      i += ticks;
      continue;
    }
    const two = text.slice(i, i + 2);
    if ((two === "**" || two === "__" || two === "~~") && text[i + 2] && text[i + 2] !== " ") {
      const end = find(text, two, i + 3);
      if (end > i + 2) {
        wrapped(two === "~~" ? "del" : "strong", text.slice(i + 2, end));
        i = end + 2;
        continue;
      }
    }
    if ((c === "*" || c === "_") && text[i + 1] && text[i + 1] !== " " && text[i + 1] !== c
        && (c === "*" || i === 0 || !/\w/.test(text[i - 1]))) {
      let end = find(text, c, i + 1);
      while (end > 0 && (text[end + 1] === c || text[end - 1] === " " || (c === "_" && /\w/.test(text[end + 1] || "")))) {
        end = end - i > WINDOW ? -1 : text[end + 1] === c ? find(text, c, end + 2) : find(text, c, end + 1);
      }
      if (end > i + 1) {
        wrapped("em", text.slice(i + 1, end));
        i = end + 1;
        continue;
      }
    }
    if (c === "[" || (c === "!" && text[i + 1] === "[")) {
      const image = c === "!";
      const open = image ? i + 1 : i;
      const close = find(text, "](", open);
      const end = close > 0 ? find(text, ")", close + 2) : -1;
      if (close > open && end > close && !text.slice(open + 1, close).includes("\n")) {
        const label = text.slice(open + 1, close);
        const url = text.slice(close + 2, end).split(/\s+/)[0] || "";
        flush();
        if (image) out.push(el("span", { class: "md-image" }, `[image: ${label || url}]`));
        else if (safeUrl(url)) {
          out.push(el("a", { href: safeUrl(url), target: "_blank", rel: "noopener noreferrer", title: url },
            depth < DEPTH ? inline(label, depth + 1) : label));
        } else out.push(`[${label}](${url})`);
        i = end + 1;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return out;
}

function isTableRow(line) { return /^\s*\|.*\|\s*$/.test(line); }
function cells(line) { return line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim()); }

// `text` as Markdown: a block of elements (a div of class "md"); `depth`: how deep in quotes it is.
export function markdown(text, depth = 0) {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const blocks = [];
  let para = [];
  const endPara = () => {
    if (para.length) blocks.push(el("p", {}, inline(para.join("\n"))));
    para = [];
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      endPara();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      blocks.push(el("pre", { class: "md-code", "data-lang": fence[2] || null }, el("code", {}, body.join("\n"))));
      continue;
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      endPara();
      blocks.push(el(`h${Math.min(6, heading[1].length + 2)}`, { class: "md-h" }, inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      endPara();
      blocks.push(el("hr", {}));
      i++;
      continue;
    }
    if (/^\s*>/.test(line) && depth < DEPTH) {
      endPara();
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*> ?/, ""));
      blocks.push(el("blockquote", {}, [...markdown(quoted.join("\n"), depth + 1).childNodes]));
      continue;
    }
    const item = line.match(/^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/);
    if (item) {
      endPara();
      const ordered = /\d/.test(item[2]);
      const list = el(ordered ? "ol" : "ul", {});
      if (ordered && parseInt(item[2], 10) !== 1) list.setAttribute("start", String(parseInt(item[2], 10)));
      while (i < lines.length) {
        const m = lines[i].match(/^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/);
        if (m && /\d/.test(m[2]) === ordered) {
          const li = el("li", {}, inline(m[3]));
          li.dataset.indent = String(m[1].length);
          list.appendChild(li);
          i++;
        } else if (lines[i].trim() && /^\s{2,}\S/.test(lines[i]) && list.lastChild) {
          list.lastChild.append("\n", ...inline(lines[i].trim()));
          i++;
        } else break;
      }
      blocks.push(list);
      continue;
    }
    if (isTableRow(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      endPara();
      const head = cells(line);
      i += 2;
      const rows = [];
      while (i < lines.length && isTableRow(lines[i])) rows.push(cells(lines[i++]));
      blocks.push(el("table", { class: "md-table" }, el("thead", {}, el("tr", {}, head.map((c) => el("th", {}, inline(c))))),
        el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, inline(c))))))));
      continue;
    }
    if (!line.trim()) { endPara(); i++; continue; }
    para.push(line);
    i++;
  }
  endPara();
  return el("div", { class: "md" }, blocks);
}
