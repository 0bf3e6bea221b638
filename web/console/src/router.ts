// A small history router: the address is the state, so a link to a screen
// of an environment (/e/3/keywords) opens that screen in another tab or
// after a reload.
import { useEffect, useState } from "preact/hooks";

const listeners = new Set<() => void>();

// moved says the screen changed in the page (a link, back or forward), not
// by loading it: only then does a new screen take the focus (on a fresh
// load, Tab must reach the skip link first).
export let moved = false;

// focusNextScreen asks the next screen to take the focus (after signing in).
export function focusNextScreen() {
  moved = true;
}

export function navigate(to: string, replace = false) {
  if (to === location.pathname + location.search) return;
  moved = true;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  for (const fn of listeners) fn();
}

window.addEventListener("popstate", () => {
  moved = true;
  for (const fn of listeners) fn();
});

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const fn = () => setPath(location.pathname);
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return path;
}

// A route the console knows.
export type Route =
  | { name: "environments" }
  | { name: "environment"; env: number; section: Section }
  | { name: "not-found" };

export const sections = [
  { id: "", label: "Overview" },
  { id: "keywords", label: "Keywords" },
  { id: "campaigns", label: "Campaigns" },
  { id: "write", label: "Write" },
  { id: "posts", label: "Posts" },
  { id: "autopilot", label: "Autopilot" },
  { id: "costs", label: "Costs" },
] as const;
export type Section = (typeof sections)[number]["id"];

export function match(path: string): Route {
  if (path === "/" || path === "") return { name: "environments" };
  const m = /^\/e\/([1-9]\d{0,15})(?:\/([a-z]*))?\/?$/.exec(path);
  if (m) {
    const section = sections.find((s) => s.id === (m[2] ?? ""));
    if (section) return { name: "environment", env: Number(m[1]), section: section.id };
  }
  return { name: "not-found" };
}

export function envPath(env: number, section: Section = ""): string {
  return `/e/${env}` + (section ? "/" + section : "");
}

// onLinkClick makes a plain <a href> navigate in the page, leaving clicks
// with a modifier (new tab, new window) to the browser.
export function onLinkClick(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.currentTarget as HTMLAnchorElement;
  if (a.origin !== location.origin) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}
