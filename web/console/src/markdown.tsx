// A Markdown preview that cannot run script: the text is parsed here into
// Preact elements (never HTML strings, never innerHTML on the page), so raw HTML in a
// model's article or a WordPress post stays characters, and only links to
// http(s), mailto, a path or an anchor become links. Images are shown as
// links to them (the page loads nothing from elsewhere). It covers what
// articles use: headings, paragraphs, lists, quotes, code, rules, emphasis,
// strong, inline code and links; tables and the rest show as text.
import type { ComponentChildren, VNode } from "preact";
import { useMemo, useState } from "preact/hooks";

// safeHref is href as the browser would resolve it (the URL parser drops
// leading and trailing C0 controls and spaces and every tab and newline, so
// "java\tscript:" and "\x01javascript:" are javascript: addresses), kept
// only when it then leads to http(s) or mailto; a relative link resolves
// against the page, so it is the page's http(s). The resolved address is
// returned: the element gets exactly what was checked. An empty href, or
// one the parser refuses, is no link.
const safeProtocols = new Set(["http:", "https:", "mailto:"]);
export function safeHref(href: string, base: string = location.href): string | null {
  if (!href.replace(/[\u0000-\u0020]/g, "")) return null;
  let u: URL;
  try {
    u = new URL(href, base);
  } catch {
    return null;
  }
  return safeProtocols.has(u.protocol) ? u.href : null;
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

// CopyCode copies a code block's text to the clipboard.
function CopyCode({ text }: { text: string }) {
  const [done, setDone] = useState<string>("");
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setDone("Copied"),
      () => setDone("Could not copy: select the code and copy it"),
    );
  return (
    <div class="copy">
      <button type="button" class="small" onClick={() => void copy()}>
        Copy code
      </button>
      <span role="status" class="muted small">
        {done}
      </span>
    </div>
  );
}

// blocks parses Markdown into block elements; with copy, each code block
// has a "Copy code" button.
export function blocks(md: string, copy = false): Block[] {
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
      const pre = (
        <pre key={k()}>
          <code>{code.join("\n")}</code>
        </pre>
      );
      out.push(
        copy ? (
          <div key={k()} class="code">
            {pre}
            <CopyCode text={code.join("\n")} />
          </div>
        ) : (
          pre
        ),
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
      out.push(<blockquote key={k()}>{blocks(quote.join("\n"), copy)}</blockquote>);
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

export function Markdown({ text, label, copy }: { text: string; label: string; copy?: boolean }) {
  return (
    <section class="preview" aria-label={label}>
      {blocks(text, copy)}
    </section>
  );
}

// HTML from elsewhere (a WordPress site's post) as elements: it is parsed
// into an inert template (no script runs, nothing loads), and
// only an allow-list of text elements is rebuilt as Preact elements, with
// no attribute but a link's safe href. Anything else keeps its text and
// loses its element; script, style and embeds lose everything.
const keepTags = new Set([
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "em", "strong", "b", "i", "s", "del",
  "br", "hr", "table", "thead", "tbody", "tr", "th", "td", "figure", "figcaption", "sub", "sup",
]);
const dropTags = new Set(["script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math", "form", "input", "button", "select", "textarea"]);

function fromNodes(nodes: NodeListOf<ChildNode>, key: string): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  nodes.forEach((n, i) => {
    const k = `${key}.${i}`;
    if (n.nodeType === Node.TEXT_NODE) out.push(n.textContent ?? "");
    if (n.nodeType !== Node.ELEMENT_NODE) return;
    const el = n as Element;
    const tag = el.tagName.toLowerCase();
    if (dropTags.has(tag)) return;
    if (tag === "img") {
      const src = safeHref(el.getAttribute("src") ?? "");
      const label = `image: ${el.getAttribute("alt") || el.getAttribute("src") || ""}`;
      out.push(src ? <a key={k} href={src} rel="noopener noreferrer nofollow" target="_blank">{label}</a> : <span key={k}>{label}</span>);
      return;
    }
    const children = fromNodes(el.childNodes, k);
    if (tag === "a") {
      const href = safeHref(el.getAttribute("href") ?? "");
      out.push(href ? <a key={k} href={href} rel="noopener noreferrer nofollow" target="_blank">{children}</a> : <span key={k}>{children}</span>);
    } else if (keepTags.has(tag)) {
      const Tag = tag as "p";
      out.push(<Tag key={k}>{children.length ? children : undefined}</Tag>);
    } else out.push(...children);
  });
  return out;
}

export function Html({ html, label }: { html: string; label: string }) {
  const nodes = useMemo(() => {
    // A template's content belongs to a document with no browsing context:
    // nothing in it loads or runs, not even an image's error handler.
    // Chromium still checks an on* attribute against the CSP as it is
    // parsed (and reports the blocked handler), so inside tags they are
    // renamed first; none would run, and none is kept anyway.
    const t = document.createElement("template");
    t.innerHTML = html.replace(/<[^<>]*>/g, (tag) => tag.replace(/([\s/"'])on([a-z]+\s*=)/gi, "$1data-was-on$2"));
    return fromNodes(t.content.childNodes, "h");
  }, [html]);
  return (
    <section class="preview" aria-label={label}>
      {nodes}
    </section>
  );
}
