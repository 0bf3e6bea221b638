// A Markdown preview that cannot run script: the text is parsed here into
// Preact elements (never HTML strings, never innerHTML), so raw HTML in a
// model's article or a WordPress post stays characters, and only links to
// http(s), mailto, a path or an anchor become links. Images are shown as
// links to them (the page loads nothing from elsewhere). It covers what
// articles use: headings, paragraphs, lists, quotes, code, rules, emphasis,
// strong, inline code and links; tables and the rest show as text.
import type { ComponentChildren, VNode } from "preact";

export function safeHref(href: string): string | null {
  const h = href.trim();
  if (/^(https?:|mailto:)/i.test(h)) return h;
  if (/^[/#?]/.test(h) && !h.startsWith("//")) return h;
  if (!/^[a-z][a-z0-9+.-]*:/i.test(h) && !h.startsWith("//")) return h; // relative
  return null;
}

// inline turns one paragraph's text into elements.
export function inline(text: string, key = "i"): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  // Underscores count only at word edges (snake_case and __init__ stay text).
  const re = new RegExp(
    [
      "(?<tick>`+)(?<code>[\\s\\S]*?)\\k<tick>",
      "(?<img>!?)\\[(?<label>[^\\]]*)\\]\\((?<href>[^()\\s]*(?:\\([^()\\s]*\\))?[^()\\s]*)(?:\\s+\"[^\"]*\")?\\)",
      "\\*\\*(?=\\S)(?<strong>[\\s\\S]*?\\S)\\*\\*",
      "(?<!\\w)__(?=\\S)(?<strong2>[\\s\\S]*?\\S)__(?!\\w)",
      "\\*(?=\\S)(?<em>[\\s\\S]*?\\S)\\*",
      "(?<!\\w)_(?=\\S)(?<em2>[\\s\\S]*?\\S)_(?!\\w)",
      "~~(?=\\S)(?<del>[\\s\\S]*?\\S)~~",
    ].join("|"),
    "g",
  );
  let last = 0;
  let n = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const g = m.groups ?? {};
    if (m.index > last) out.push(text.slice(last, m.index));
    const k = `${key}.${n++}`;
    const strong = g.strong ?? g.strong2;
    const em = g.em ?? g.em2;
    if (g.tick) out.push(<code key={k}>{g.code}</code>);
    else if (g.label !== undefined && g.href !== undefined) {
      const href = safeHref(g.href);
      const label = g.img ? `image: ${g.label || g.href}` : g.label;
      out.push(href ? <a key={k} href={href} rel="noopener noreferrer nofollow" target="_blank">{g.img ? label : inline(label, k)}</a> : <span key={k}>{label}</span>);
    } else if (strong !== undefined) out.push(<strong key={k}>{inline(strong, k)}</strong>);
    else if (em !== undefined) out.push(<em key={k}>{inline(em, k)}</em>);
    else if (g.del !== undefined) out.push(<s key={k}>{inline(g.del, k)}</s>);
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

type Block = VNode;

// blocks parses Markdown into block elements.
export function blocks(md: string): Block[] {
  const lines = md.replace(/\r\n?/g, "\n").split("\n");
  const out: Block[] = [];
  let i = 0;
  const k = () => `b${out.length}`;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = /^\s{0,3}(```|~~~)/.exec(line);
    if (fence) {
      const code: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? "").trimStart().startsWith(fence[1] ?? "```")) code.push(lines[i++] ?? "");
      i++;
      out.push(
        <pre key={k()}>
          <code>{code.join("\n")}</code>
        </pre>,
      );
      continue;
    }
    const h = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const level = (h[1] ?? "#").length;
      // The screen has its own h1 and h2: an article's headings start at h3.
      const Tag = `h${Math.min(6, level + 2)}` as "h3";
      out.push(<Tag key={k()}>{inline(h[2] ?? "", k())}</Tag>);
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push(<hr key={k()} />);
      i++;
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      const quote: string[] = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i] ?? "")) quote.push((lines[i++] ?? "").replace(/^\s{0,3}>\s?/, ""));
      out.push(<blockquote key={k()}>{blocks(quote.join("\n"))}</blockquote>);
      continue;
    }
    const li = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+/;
    const first = li.exec(line);
    if (first) {
      const ordered = /\d/.test(first[1] ?? "");
      const items: string[][] = [];
      while (i < lines.length) {
        const l = lines[i] ?? "";
        const m = li.exec(l);
        if (m && /\d/.test(m[1] ?? "") === ordered) items.push([l.slice(m[0].length)]);
        else if (l.trim() && /^\s{2,}/.test(l) && items.length) items[items.length - 1]?.push(l.trim());
        else break;
        i++;
      }
      const children = items.map((it, n) => <li key={n}>{inline(it.join(" "), `${k()}.${n}`)}</li>);
      out.push(ordered ? <ol key={k()}>{children}</ol> : <ul key={k()}>{children}</ul>);
      continue;
    }
    const para: string[] = [];
    while (i < lines.length) {
      const l = lines[i] ?? "";
      if (!l.trim() || /^\s{0,3}(#{1,6}\s|>|```|~~~|[-*+]\s|\d{1,9}[.)]\s)/.test(l)) break;
      para.push(l.trim());
      i++;
    }
    if (!para.length) para.push((lines[i++] ?? "").trim()); // never stuck on a line no rule takes
    out.push(<p key={k()}>{inline(para.join("\n"), k())}</p>);
  }
  return out;
}

export function Markdown({ text, label }: { text: string; label: string }) {
  return (
    <section class="preview" aria-label={label}>
      {blocks(text)}
    </section>
  );
}
