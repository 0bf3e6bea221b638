// The administration (admins and super_admins): its own navigation between
// users, environments, credentials, AI settings and webhooks, each screen loaded when
// first opened; a super_admin's also leads to Backups (theirs alone). A user
// of another role who types its address gets the screen with the server's
// 403 (the API decides, not the console).
import { useEffect } from "preact/hooks";
import { LazyPage } from "./lazy";
import { adminPages, adminPath, backupsPath, type AdminPage } from "./router";
import { session } from "./session";
import { Shell } from "./shell";
import { Link } from "./ui";

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
            {session.user?.role === "super_admin" && (
              <li>
                <Link href={backupsPath}>Backups</Link>
              </li>
            )}
          </ul>
        </nav>
        <div>
          <LazyPage key={page + location.search} page={`admin/${page}`} label={label} />
        </div>
      </div>
    </Shell>
  );
}
