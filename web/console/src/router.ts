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

// usePath is the address's path and query (?post=3 opens a post: a new
// query on the same screen is a new screen too).
export function usePath(): string {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const fn = () => setPath(location.pathname + location.search);
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return path;
}

// A route the console knows.
export type Route =
  | { name: "environments" }
  | { name: "environment"; env: number; section: Section }
  | { name: "backups" }
  | { name: "messages" }
  | { name: "account" }
  | { name: "admin"; page: AdminPage }
  | { name: "not-found" };

export const sections = [
  { id: "", label: "Overview" },
  { id: "keywords", label: "Keywords" },
  { id: "campaigns", label: "Campaigns" },
  { id: "write", label: "Write" },
  { id: "archetypes", label: "Archetypes" },
  { id: "posts", label: "Posts" },
  { id: "autopilot", label: "Autopilot" },
  { id: "costs", label: "Costs" },
  { id: "chat", label: "Chat" },
  { id: "live", label: "Live sessions" },
  { id: "sources", label: "Web sources" },
  { id: "phrases", label: "Search phrases" },
  { id: "agents", label: "Agents" },
] as const;
export type Section = (typeof sections)[number]["id"];

export function match(address: string): Route {
  const path = address.split("?")[0] ?? "";
  if (path === "/" || path === "") return { name: "environments" };
  if (path === backupsPath) return { name: "backups" };
  if (path === messagesPath) return { name: "messages" };
  if (path === accountPath || path === accountPath + "/") return { name: "account" };
  const a = /^\/admin\/([a-z]+)\/?$/.exec(path);
  const admin = a && adminPages.find((p) => p.id === a[1]);
  if (admin) return { name: "admin", page: admin.id };
  const m = /^\/e\/([1-9]\d{0,15})(?:\/([a-z]*))?\/?$/.exec(path);
  if (m) {
    const section = sections.find((s) => s.id === (m[2] ?? ""));
    if (section) return { name: "environment", env: Number(m[1]), section: section.id };
  }
  return { name: "not-found" };
}

// The instance's backups (super_admin) and the user's direct messages
// (?with=<user id> opens a conversation).
export const backupsPath = "/admin/backups";
export const messagesPath = "/messages";
// The signed-in user's own screen (profile, two-factor, sessions, license),
// and the administration's credentials screen (no-credential empty states
// link there).
export const accountPath = "/account";
export const credentialsPath = "/admin/credentials";
// The administration's screens (admins): /admin/users, /admin/environments,
// /admin/credentials, /admin/ai, /admin/webhooks.
export const adminPages = [
  { id: "users", label: "Users" },
  { id: "environments", label: "Environments" },
  { id: "credentials", label: "Credentials" },
  { id: "ai", label: "AI settings" },
  { id: "webhooks", label: "Webhooks" },
] as const;
export type AdminPage = (typeof adminPages)[number]["id"];
export const adminPath = (page: AdminPage) => `/admin/${page}`;

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

// screenOf is the console's address of what an API path is about (a
// notification's link), in environment env; null when no screen shows it.
export function screenOf(link: string | null | undefined, env: number | null | undefined): string | null {
  const talk = link ? /^\/api\/messages\/conversations\/(\d+)$/.exec(link) : null;
  if (talk) return `${messagesPath}?with=${talk[1]}`; // a message received: the conversation
  if (!link || !env) return null;
  const at = (section: Section, query = "") => envPath(env, section) + query;
  let m: RegExpExecArray | null;
  if ((m = /^\/api\/wordpress-posts\/(\d+)$/.exec(link))) return at("posts", `?post=${m[1]}`);
  if ((m = /^\/api\/astro-posts\/(\d+)$/.exec(link))) return at("posts", `?target=astro&post=${m[1]}`);
  if ((m = /^\/api\/cie\/runs\/(\d+)$/.exec(link))) return at("write", `?run=${m[1]}`);
  if ((m = /^\/api\/agents\/runs\/(\d+)$/.exec(link))) return at("agents", `?run=${m[1]}`);
  if ((m = /^\/api\/agents\/(\d+)$/.exec(link))) return at("agents", `?id=${m[1]}`);
  if ((m = /^\/api\/seo\/campaigns\/(\d+)/.exec(link))) return at("campaigns", `?id=${m[1]}`);
  if ((m = /^\/api\/seo\/strategies\/(\d+)$/.exec(link))) return at("campaigns", `?strategy=${m[1]}`);
  if (link.startsWith("/api/seo/")) return at("keywords");
  if (link.startsWith("/api/autopilot")) return at("autopilot");
  if (link.startsWith("/api/token-analytics")) return at("costs");
  return null;
}
