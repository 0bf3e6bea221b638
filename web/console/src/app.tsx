// The console's root: who is signed in decides between the sign-in page and
// the screens; the address decides the screen.
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "./api/client";
import { Environments } from "./environments";
import { notifications } from "./notifications";
import { Overview } from "./overview";
import { match, sections, usePath, type Section } from "./router";
import { session } from "./session";
import { Shell } from "./shell";
import { SessionDialog, SignInPage } from "./signin";
import { Alert, Heading, Link, useResource } from "./ui";
import { LazyScreen } from "./lazy";

// useTitle names the tab after the screen; null leaves it to a child.
function useTitle(title: string | null) {
  useEffect(() => {
    if (title !== null) document.title = title;
  }, [title]);
}

function useSession() {
  const [, force] = useState(0);
  useEffect(() => session.subscribe(() => force((n) => n + 1)), []);
  return session;
}

export function App() {
  const s = useSession();
  const path = usePath();
  const token = s.current;
  const ended = s.ended;
  const hadScreens = useRef(false);
  const signedIn = token !== null;

  useEffect(() => {
    if (signedIn) notifications.start();
    else notifications.stop();
  }, [signedIn, token?.user.id]);

  if (!token && (!hadScreens.current || ended?.reason !== "ended")) {
    hadScreens.current = false;
    return <SignInPage message={ended?.message} />;
  }
  hadScreens.current = true;
  return (
    <>
      <Screens path={path} />
      {!token && ended && <SessionDialog message={ended.message} userId={ended.userId} email={ended.email} />}
    </>
  );
}

function Screens({ path }: { path: string }) {
  const r = match(path);
  useTitle(r.name === "environments" ? "Environments · copydesk" : r.name === "not-found" ? "Not found · copydesk" : null);
  if (r.name === "environments") {
    return (
      <Shell>
        <Environments />
      </Shell>
    );
  }
  if (r.name === "environment") return <EnvironmentScreens env={r.env} section={r.section} />;
  return (
    <Shell>
      <Heading>Page not found</Heading>
      <p>
        There is no screen at this address. <Link href="/">Go to your environments</Link>.
      </p>
    </Shell>
  );
}

function EnvironmentScreens({ env, section }: { env: number; section: Section }) {
  const e = useResource((signal) => api.get("/api/environments/{id}", { path: { id: env }, signal }), [env]);
  const name = e.data?.data.name;
  const label = sections.find((x) => x.id === section)?.label ?? "";
  useTitle([label, name, "copydesk"].filter(Boolean).join(" · "));
  if (e.error) {
    return (
      <Shell>
        <Heading>Environment not available</Heading>
        <Alert>{e.error}</Alert>
        <p>
          It may have been deleted, or you may not have access to it. <Link href="/">Choose another environment</Link>.
        </p>
      </Shell>
    );
  }
  return (
    <Shell env={env} envName={name} section={section}>
      {section === "" ? <Overview key={env} env={env} envName={name} /> : <LazyScreen key={`${env}/${section}${location.search}`} section={section} env={env} envName={name} label={label} />}
    </Shell>
  );
}
