// The administration (admins and super_admins): its own navigation between
// users, environments, credentials and AI settings, each screen loaded when
// first opened. A user of another role who types its address gets the
// screen with the server's 403 (the API decides, not the console).
import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import { adminPages, adminPath, type AdminPage } from "./router";
import { Shell } from "./shell";
import { Alert, Heading, Link } from "./ui";

const loaders: Record<AdminPage, () => Promise<FunctionComponent>> = {
  users: () => import("./screens/admin-users").then((m) => m.Users),
  environments: () => import("./screens/admin-environments").then((m) => m.AdminEnvironments),
  credentials: () => import("./screens/admin-credentials").then((m) => m.Credentials),
  ai: () => import("./screens/admin-ai").then((m) => m.AISettings),
};
const loaded = new Map<AdminPage, FunctionComponent>();

export function AdminScreens({ page }: { page: AdminPage }) {
  const label = adminPages.find((p) => p.id === page)?.label ?? "";
  useEffect(() => {
    document.title = `${label} · Administration · copydesk`;
  }, [label]);
  return (
    <Shell>
      <div class="frame with-nav admin">
        <nav aria-label="Administration">
          <ul>
            {adminPages.map((p) => (
              <li key={p.id}>
                <Link href={adminPath(p.id)} aria-current={p.id === page ? "page" : undefined}>
                  {p.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div>
          <AdminLazy key={page + location.search} page={page} label={label} />
        </div>
      </div>
    </Shell>
  );
}

function AdminLazy({ page, label }: { page: AdminPage; label: string }) {
  const [Screen, setScreen] = useState<FunctionComponent | null>(() => loaded.get(page) ?? null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (Screen) return;
    let live = true;
    loaders[page]().then(
      (c) => {
        loaded.set(page, c);
        if (live) setScreen(() => c);
      },
      () => live && setError("This screen could not be loaded: the console may have been updated. Reload the page."),
    );
    return () => {
      live = false;
    };
  }, [page]);
  if (error) {
    return (
      <>
        <Heading>{label}</Heading>
        <Alert>{error}</Alert>
      </>
    );
  }
  if (!Screen) return <p role="status">Loading {label.toLowerCase()}…</p>;
  return <Screen />;
}
