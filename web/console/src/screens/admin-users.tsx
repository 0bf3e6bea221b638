// Users (admins): the accounts, paged and searched by the server; for each,
// its role, status, environment access, a reset of its two-factor
// authentication and, for an account locked after failed sign-ins (shown
// "Locked until …"), an unlock of its sign-in. Registration on or off (the
// instance's settings) heads the screen.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { session } from "../session";
import { adminPath } from "../router";
import { Alert, Checks, errorText, Field, Heading, Link, Pager, Select, Thead, useDebounced, useResource, When } from "../ui";
import { Confirm } from "../confirm";

type User = Schemas["listedUserResponse"];
const perPage = 20;
const roleWords: Record<User["role"], string> = { super_admin: "Super admin", admin: "Admin", editor: "Editor", viewer: "Viewer" };

export function Users() {
  const [q, setQ] = useState("");
  const [page, setPage] = useState(1);
  const query = useDebounced(q);
  const [open, setOpen] = useState<number | null>(null);
  const users = useResource((signal) => api.get("/api/auth/users", { query: { page, per_page: perPage, ...(query ? { q: query } : {}) }, signal }), [page, query]);
  const data = users.data?.data;
  const pages = data ? Math.max(1, Math.ceil(data.total / perPage)) : 1;
  return (
    <>
      <Heading>Users</Heading>
      <Registration />
      <section aria-labelledby="users-h">
        <h2 id="users-h">Accounts</h2>
        <Field label="Search users" type="search" name="q" value={q} onValue={(v) => { setQ(v); setPage(1); }} hint="By user name, e-mail or full name." />
        {users.error && <Alert>{users.error}</Alert>}
        {data && data.items.length === 0 && <p>{query ? `No user matches “${query}”.` : "No users yet: people who register, or accounts made with copydesk users create, appear here."}</p>}
        {data && data.items.length > 0 && (
          <div class="table-wrap">
            <table aria-label="Users">
              <Thead cols={["User", "E-mail", "Role", "Status", "Two-factor", "Last sign-in", ""]} />
              <tbody>
                {data.items.map((u) => (
                  <tr key={u.id}>
                    <td>{u.username}{u.full_name && <span class="muted"> ({u.full_name})</span>}</td>
                    <td>{u.email}</td>
                    <td>{roleWords[u.role]}</td>
                    <td>{u.is_active ? "Active" : "Disabled"}{u.locked_until && <><br />Locked until <When at={u.locked_until} /></>}</td>
                    <td>{u.two_factor_enabled ? "On" : "Off"}</td>
                    <td><When at={u.last_login_at} /></td>
                    <td>
                      {mayManage(u) ? (
                        <button type="button" aria-expanded={open === u.id} onClick={() => setOpen(open === u.id ? null : u.id)}>
                          Manage<span class="visually-hidden"> {u.username}</span>
                        </button>
                      ) : (
                        <span class="muted">Only a super admin manages {u.username}</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {data && <Pager label="Pages of users" page={page} pages={pages} onPage={setPage} />}
        {open !== null && data?.items.find((u) => u.id === open && mayManage(u)) && (
          <ManageUser key={open} user={data.items.find((u) => u.id === open) as User} onChanged={(u) => users.set({ ...users.data!, data: { ...data, items: data.items.map((x) => (x.id === u.id ? u : x)) } })} />
        )}
      </section>
    </>
  );
}

// mayManage is the server's rule (server/auth mayManage): only a super_admin
// acts on a super_admin, so a plain admin is offered nothing on one.
function mayManage(u: User): boolean {
  return u.role !== "super_admin" || session.user?.role === "super_admin";
}

function Registration() {
  const s = useResource((signal) => api.get("/api/settings/system", { signal }), []);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const open = s.data?.data.registration_open;
  async function toggle() {
    setBusy(true);
    setError(null);
    try {
      s.set(await api.put("/api/settings/system", { body: { registration_open: !open } }));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <section aria-labelledby="reg-h">
      <h2 id="reg-h">Registration</h2>
      {s.error && <Alert>{s.error}</Alert>}
      {open !== undefined && (
        <p role="status">
          {open ? "Registration is open: anyone can create an account (a viewer with no environment). " : "Registration is closed: new accounts are made on the server, with copydesk users create. "}
          <button type="button" onClick={toggle} disabled={busy}>
            {open ? "Close registration" : "Open registration"}
          </button>
        </p>
      )}
      {error && <Alert>{error}</Alert>}
    </section>
  );
}

function ManageUser({ user, onChanged }: { user: User; onChanged: (u: User) => void }) {
  const [role, setRole] = useState<string>(user.role);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirm, setConfirm] = useState<"disable" | "2fa" | "role" | null>(null);
  const self = session.user?.id === user.id;
  const roles = (session.user?.role === "super_admin" ? ["super_admin", "admin", "editor", "viewer"] : ["admin", "editor", "viewer"]) as User["role"][];

  async function act(fn: () => Promise<string>) {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      setDone(await fn());
      setConfirm(null);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  const path = { id: user.id };
  return (
    <section class="panel-box" aria-labelledby="manage-h">
      <h2 id="manage-h">Manage {user.username}</h2>
      <div class="row">
        <Select label="Role" name="role" value={role} onValue={setRole} options={roles.map((r) => [r, roleWords[r]] as const)} />
        <button type="button" disabled={busy || role === user.role} onClick={() => setConfirm("role")} aria-expanded={confirm === "role"}>
          Change role…
        </button>
      </div>
      {confirm === "role" && (
        <Confirm label="Confirm the role change" question={`Make ${user.username} ${roleWords[role as User["role"]].toLowerCase()} (now ${roleWords[user.role].toLowerCase()})?`}
          action={`Make ${user.username} ${roleWords[role as User["role"]].toLowerCase()}`} busy={busy}
          onConfirm={() => void act(async () => {
            const r = await api.put("/api/auth/users/{id}/role", { path, body: { role: role as User["role"] } });
            onChanged({ ...user, ...r.data });
            return `${user.username} is now ${roleWords[r.data.role].toLowerCase()}.`;
          })}
          onCancel={() => setConfirm(null)} />
      )}
      <div class="actions">
        {user.is_active ? (
          <button type="button" disabled={busy || self} onClick={() => setConfirm("disable")} aria-expanded={confirm === "disable"}>
            Disable…
          </button>
        ) : (
          <button type="button" disabled={busy} onClick={() => act(async () => {
            const r = await api.put("/api/auth/users/{id}/status", { path, body: { is_active: true } });
            onChanged({ ...user, ...r.data });
            return `${user.username} is enabled.`;
          })}>
            Enable
          </button>
        )}
        <button type="button" disabled={busy || !user.two_factor_enabled} onClick={() => setConfirm("2fa")} aria-expanded={confirm === "2fa"}>
          Reset two-factor…
        </button>
        {user.locked_until && <button type="button" disabled={busy} onClick={() => act(async () => {
          await api.post("/api/auth/users/{id}/unlock", { path });
          onChanged({ ...user, locked_until: null });
          return `${user.username} can sign in again: the failed attempts are forgotten.`;
        })}>
          Unlock sign-in
        </button>}
      </div>
      {confirm === "disable" && (
        <Confirm label="Confirm disabling" question={`Disable ${user.username} (${user.email})? Their sessions and API tokens stop working at once; enabling them again restores access.`}
          action={`Disable ${user.username}`} busy={busy}
          onConfirm={() => void act(async () => {
            const r = await api.put("/api/auth/users/{id}/status", { path, body: { is_active: false } });
            onChanged({ ...user, ...r.data });
            return `${user.username} is disabled.`;
          })}
          onCancel={() => setConfirm(null)} />
      )}
      {confirm === "2fa" && (
        <Confirm label="Confirm the reset" question={`Turn off two-factor authentication for ${user.username}? Their authenticator and recovery codes stop working; they sign in with the password alone until they set it up again.`}
          action={`Reset two-factor for ${user.username}`} busy={busy}
          onConfirm={() => void act(async () => {
            await api.post("/api/auth/users/{id}/reset-2fa", { path });
            onChanged({ ...user, two_factor_enabled: false });
            return `Two-factor authentication is off for ${user.username}.`;
          })}
          onCancel={() => setConfirm(null)} />
      )}
      {error && <Alert>{error}</Alert>}
      {done && <p role="status">{done}</p>}
      <Access user={user} />
    </section>
  );
}

// Access sets which environments a user sees (admins see them all).
function Access({ user }: { user: User }) {
  const envs = useResource((signal) => api.get("/api/environments", { query: { per_page: 100 }, signal }), []);
  const granted = useResource((signal) => api.get("/api/auth/users/{id}/environments", { path: { id: user.id }, signal }), [user.id]);
  const [chosen, setChosen] = useState<Set<number> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const ids = chosen ?? new Set(granted.data?.data.environment_ids ?? []);
  const admin = user.role === "admin" || user.role === "super_admin";
  async function save(e: Event) {
    e.preventDefault();
    setError(null);
    setDone(null);
    try {
      const r = await api.put("/api/auth/users/{id}/environments", { path: { id: user.id }, body: { environment_ids: [...ids] } });
      granted.set(r);
      setChosen(null);
      setDone(`${user.username} now sees ${r.data.environment_ids.length} environment${r.data.environment_ids.length === 1 ? "" : "s"}.`);
    } catch (err) {
      setError(errorText(err));
    }
  }
  const list = envs.data?.data.items ?? [];
  return (
    <form onSubmit={save} aria-labelledby="access-h">
      <h3 id="access-h">Environment access</h3>
      {admin && <p class="muted">As {roleWords[user.role].toLowerCase()}, {user.username} sees every environment; what is chosen here applies if the role changes.</p>}
      {(envs.error || granted.error) && <Alert>{envs.error ?? granted.error}</Alert>}
      {envs.data && list.length === 0 && <p>No environments yet: <Link href={adminPath("environments")}>create one under Environments</Link> first.</p>}
      {list.length > 0 && (
        <Checks legend={`Environments ${user.username} may see`} options={list.map((e) => [e.id, e.name] as const)} chosen={ids} onChosen={setChosen} />
      )}
      {list.length > 0 && <button type="submit">Save access</button>}
      {error && <Alert>{error}</Alert>}
      {done && <p role="status">{done}</p>}
    </form>
  );
}
