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
};

const loaded = new Map<Section, FunctionComponent<ScreenProps>>();

export function LazyScreen({ section, env, envName, label }: ScreenProps & { section: Exclude<Section, "">; label: string }) {
  const [Screen, setScreen] = useState<FunctionComponent<ScreenProps> | null>(() => loaded.get(section) ?? null);
  const [error, setError] = useState<string | null>(null);
  const load = loaders[section];
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
