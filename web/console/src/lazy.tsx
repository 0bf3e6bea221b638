// The screens past the overview load when first opened: each is an
// import() that esbuild splits into a chunk of its own, so the first
// screen's script stays small (the budget counts only what index.html
// loads and what that imports statically).
import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { Section } from "./router";
import { Alert, Heading } from "./ui";

export type ScreenProps = { env: number; envName: string | undefined };
type Loader = () => Promise<FunctionComponent<ScreenProps>>;

const loaders: Record<Exclude<Section, "">, Loader> = {
  keywords: () => import("./screens/keywords").then((m) => m.Keywords),
  write: () => import("./screens/write").then((m) => m.Write),
  posts: () => import("./screens/posts").then((m) => m.Posts),
  autopilot: () => import("./screens/autopilot").then((m) => m.Autopilot),
  costs: () => import("./screens/costs").then((m) => m.Costs),
  campaigns: () => import("./screens/campaigns").then((m) => m.Campaigns),
  chat: () => import("./screens/chat").then((m) => m.Chat),
  live: () => import("./screens/live").then((m) => m.Live),
  sources: () => import("./screens/sources").then((m) => m.WebSources),
  phrases: () => import("./screens/phrases").then((m) => m.SearchPhrases),
  agents: () => import("./screens/agents").then((m) => m.Agents),
  archetypes: () => import("./screens/archetypes").then((m) => m.Archetypes),
};

// Screens outside any environment, loaded the same way.
const pages = {
  backups: () => import("./screens/backups").then((m) => m.Backups),
  messages: () => import("./screens/messages").then((m) => m.Messages),
  account: () => import("./screens/account").then((m) => m.Account),
  "admin/users": () => import("./screens/admin-users").then((m) => m.Users),
  "admin/environments": () => import("./screens/admin-environments").then((m) => m.AdminEnvironments),
  "admin/credentials": () => import("./screens/admin-credentials").then((m) => m.Credentials),
  "admin/ai": () => import("./screens/admin-ai").then((m) => m.AISettings),
  "admin/webhooks": () => import("./screens/admin-webhooks").then((m) => m.Webhooks),
} satisfies Record<string, () => Promise<FunctionComponent>>;

export function LazyPage({ page, label }: { page: keyof typeof pages; label: string }) {
  return <LazyScreen section={page as never} env={0} envName={undefined} label={label} load={pages[page] as Loader} />;
}

const loaded = new Map<string, FunctionComponent<ScreenProps>>();

export function LazyScreen({ section, env, envName, label, load = loaders[section] }: ScreenProps & { section: Exclude<Section, "">; label: string; load?: Loader }) {
  const [Screen, setScreen] = useState<FunctionComponent<ScreenProps> | null>(() => loaded.get(section) ?? null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (Screen) return;
    let live = true;
    load().then(
      (c) => {
        loaded.set(section, c);
        if (live) setScreen(() => c);
      },
      () => live && setError("This screen could not be loaded: the console may have been updated. Reload the page."),
    );
    return () => {
      live = false;
    };
  }, [section]);
  if (error) {
    return (
      <>
        <Heading>{label}</Heading>
        <Alert>{error}</Alert>
      </>
    );
  }
  if (!Screen) return <p role="status">Loading {label.toLowerCase()}…</p>;
  return <Screen env={env} envName={envName} />;
}
