// Your account: the profile (name, username, e-mail, password) and the
// avatar; two-factor authentication turned on by scanning the QR code and
// confirming with a code, its recovery codes shown once with a download,
// and turned off; the personal API tokens (made with the secret shown
// once, revoked after a confirmation); the sessions (device, place, last seen), each of which
// can be ended after a confirmation, this device's marked; the license,
// activated with a key and deactivated after a confirmation.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, request, upload, type Schemas } from "../api/client";
import { navigate } from "../router";
import { session, sentence } from "../session";
import { Alert, Checks, errorText, Field, FormActions, Heading, Notice, num, Select, Table, TextArea, useAction, useResource, useSubmit, When } from "../ui";
import { Confirm } from "../confirm";

type User = Schemas["userResponse"];
type Session = Schemas["sessionResponse"];
type ApiToken = Schemas["apiTokenResponse"];

export function Account() {
  const me = useResource((signal) => api.get("/api/auth/me", { signal }), []);
  const user = me.data?.data ?? null;
  function changed(u: User) {
    me.set({ data: u, message: "" });
    session.updatedUser(u);
  }
  return (
    <>
      <Heading>Your account</Heading>
      {me.error && <Alert>{me.error}</Alert>}
      {user && (
        <>
          <Profile user={user} onChanged={changed} />
          <Avatar user={user} onChanged={changed} />
          <TwoFactor onChanged={() => me.reload()} />
        </>
      )}
      <Sessions />
      <Tokens />
      <License />
    </>
  );
}

const profileFields = ["full_name", "username", "email", "current_password", "new_password"];

function Profile({ user, onChanged }: { user: User; onChanged: (u: User) => void }) {
  const [f, setF] = useState({ full_name: user.full_name, username: user.username, email: user.email, current_password: "", new_password: "" });
  const [notice, setNotice] = useState<string | null>(null);
  const set = (patch: Partial<typeof f>) => setF({ ...f, ...patch });
  const needsPassword = f.email !== user.email || f.new_password !== "";
  const { errors, busy, submit } = useSubmit(profileFields, async () => {
    setNotice(null);
    const body = {
      full_name: f.full_name,
      username: f.username,
      ...(f.email !== user.email ? { email: f.email } : {}),
      ...(f.new_password ? { new_password: f.new_password } : {}),
      ...(needsPassword ? { current_password: f.current_password } : {}),
    };
    const r = await api.put("/api/auth/me", { body });
    onChanged(r.data);
    setF({ full_name: r.data.full_name, username: r.data.username, email: r.data.email, current_password: "", new_password: "" });
    setNotice(f.new_password ? "Profile saved. The new password ended your other sessions." : "Profile saved.");
  });
  return (
    <section aria-labelledby="acc-profile">
      <h2 id="acc-profile">Profile</h2>
      <form onSubmit={submit} noValidate>
        <Field label="Full name" name="full_name" value={f.full_name} onValue={(v) => set({ full_name: v })} error={errors.fields.full_name} autoComplete="name" />
        <Field label="Username" name="username" value={f.username} onValue={(v) => set({ username: v })} error={errors.fields.username} autoComplete="username" />
        <Field label="E-mail" name="email" type="email" value={f.email} onValue={(v) => set({ email: v })} error={errors.fields.email} autoComplete="email" />
        <Field label="New password" name="new_password" type="password" value={f.new_password} onValue={(v) => set({ new_password: v })} error={errors.fields.new_password}
          autoComplete="new-password" hint="Leave empty to keep it. A new password ends your other sessions." />
        {needsPassword && (
          <Field label="Current password" name="current_password" type="password" value={f.current_password} onValue={(v) => set({ current_password: v })}
            error={errors.fields.current_password} autoComplete="current-password" hint="Needed to change the e-mail address or the password." />
        )}
        {errors.form && <Alert>{sentence(errors.form)}</Alert>}
        <Notice text={notice} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Save the profile
          </button>
        </div>
      </form>
    </section>
  );
}

// useImage is an image the API serves behind the Authorization header, as
// a data: address (the console's CSP allows img-src 'self' data:; an
// <img src> at the API could not carry the header).
function useImage(path: string | null) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    setSrc(null);
    if (!path) return;
    const ac = new AbortController();
    request("get", path, { accept: "image/*", signal: ac.signal })
      .then((r) => r.blob())
      .then(
        (b) =>
          new Promise<string>((resolve, reject) => {
            const fr = new FileReader();
            fr.onload = () => resolve(String(fr.result));
            fr.onerror = () => reject(fr.error);
            fr.readAsDataURL(b);
          }),
      )
      .then((u) => !ac.signal.aborted && setSrc(u), () => undefined);
    return () => ac.abort();
  }, [path]);
  return src;
}

function Avatar({ user, onChanged }: { user: User; onChanged: (u: User) => void }) {
  const src = useImage(user.avatar_url);
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [asking, setAsking] = useState(false);
  async function send(file: File) {
    setError(null);
    setProgress(0);
    const form = new FormData();
    form.append("file", file);
    try {
      const r = await upload("/api/auth/me/avatar", form, setProgress);
      onChanged(r.data);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setProgress(null);
    }
  }
  async function remove() {
    setError(null);
    try {
      const r = await api.del("/api/auth/me/avatar");
      setAsking(false);
      onChanged(r.data);
    } catch (err) {
      setError(errorText(err));
    }
  }
  return (
    <section aria-labelledby="acc-avatar">
      <h2 id="acc-avatar">Avatar</h2>
      {user.avatar_url ? src ? <img class="avatar" src={src} alt="Your avatar" width={96} height={96} /> : <p class="muted">Loading your avatar…</p> : <p class="muted">No avatar yet.</p>}
      <div class="field">
        <label for="acc-avatar-file">{user.avatar_url ? "Replace the avatar" : "Upload an avatar"}</label>
        <p class="hint" id="acc-avatar-hint">
          PNG, JPEG, GIF or WebP, at most 2 MiB and 2048×2048 pixels.
        </p>
        <input id="acc-avatar-file" type="file" accept="image/png,image/jpeg,image/gif,image/webp" aria-describedby="acc-avatar-hint" disabled={progress !== null}
          onChange={(e) => {
            const file = e.currentTarget.files?.[0];
            e.currentTarget.value = "";
            if (file) void send(file);
          }} />
      </div>
      {progress !== null && <progress max={1} value={progress} aria-label="Uploading the avatar" />}
      {error && <Alert>{error}</Alert>}
      {user.avatar_url && (
        <div class="actions">
          <button type="button" onClick={() => setAsking(true)} aria-expanded={asking}>
            Remove the avatar…
          </button>
        </div>
      )}
      {asking && (
        <Confirm label="Confirm removal" question="Remove your avatar? Your account will have none until you upload another." action="Remove the avatar"
          onConfirm={() => void remove()} onCancel={() => setAsking(false)} />
      )}
    </section>
  );
}

type Setup = Schemas["totpSetupResponse"];

function TwoFactor({ onChanged }: { onChanged: () => void }) {
  const state = useResource((signal) => api.get("/api/auth/2fa", { signal }), []);
  const [setup, setSetup] = useState<Setup | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const { busy, error, act } = useAction();
  const s = state.data?.data;
  const start = () => act(async () => setSetup((await api.post("/api/auth/2fa/setup", {})).data));
  function done(recovery: string[] | null) {
    setSetup(null);
    setCodes(recovery);
    state.reload();
    onChanged();
  }
  return (
    <section aria-labelledby="acc-2fa">
      <h2 id="acc-2fa">Two-factor authentication</h2>
      {state.error && <Alert>{state.error}</Alert>}
      {codes && <RecoveryCodes codes={codes} onSaved={() => setCodes(null)} />}
      {s && !codes && s.two_factor_enabled && (
        <>
          <p>
            On. {num(s.recovery_codes_left)} recovery codes left{s.recovery_codes_left < 3 ? ": turn it off and on again for ten new ones." : "."}
          </p>
          <TurnOff onDone={() => done(null)} />
        </>
      )}
      {s && !s.two_factor_enabled && !setup && (
        <>
          <p>Off. With it on, signing in asks for a code from an authenticator app as well as the password.</p>
          <div class="actions">
            <button type="button" onClick={() => void start()} disabled={busy !== null}>
              Turn on two-factor authentication
            </button>
          </div>
        </>
      )}
      {setup && <TwoFactorSetup setup={setup} onDone={done} onCancel={() => setSetup(null)} />}
      {error && <Alert>{error}</Alert>}
    </section>
  );
}

function TwoFactorSetup({ setup, onDone, onCancel }: { setup: Setup; onDone: (codes: string[]) => void; onCancel: () => void }) {
  const [code, setCode] = useState("");
  const [password, setPassword] = useState("");
  const { errors, busy, submit } = useSubmit(["code", "current_password"], async () => {
    const r = await api.post("/api/auth/2fa/verify", { body: { code: code.replace(/\s+/g, ""), current_password: password } });
    onDone(r.data.recovery_codes);
  });
  return (
    <form onSubmit={submit} noValidate aria-labelledby="acc-2fa-setup">
      <h3 id="acc-2fa-setup">Scan the code</h3>
      <p>Scan this QR code with an authenticator app, then type the six-digit code it shows.</p>
      <img class="qr" src={setup.qr_code} alt="QR code to scan with an authenticator app" width={200} height={200} />
      <p class="small">
        Or type this key into the app: <code class="secret">{setup.secret}</code>
      </p>
      <Field label="Code from the app" name="code" value={code} onValue={setCode} error={errors.fields.code} autoComplete="one-time-code" />
      <Field label="Your password" name="current_password" type="password" value={password} onValue={setPassword} error={errors.fields.current_password} autoComplete="current-password" />
      <FormActions error={errors.form} disabled={busy} onCancel={onCancel}>
        Confirm and turn on
      </FormActions>
    </form>
  );
}

// RecoveryCodes shows the codes this once, with a download made in the
// page (a blob: address: nothing is asked of the server again).
function RecoveryCodes({ codes, onSaved }: { codes: string[]; onSaved: () => void }) {
  const [href, setHref] = useState<string | null>(null);
  useEffect(() => {
    const text = "copydesk recovery codes (each works once)\n\n" + codes.join("\n") + "\n";
    const u = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    setHref(u);
    return () => URL.revokeObjectURL(u);
  }, [codes]);
  return (
    <div class="card" role="region" aria-labelledby="acc-codes">
      <h3 id="acc-codes">Your recovery codes</h3>
      <p role="status">Two-factor authentication is on. Keep these codes somewhere safe: each signs you in once without the app. They are shown only now.</p>
      <ul class="codes" aria-labelledby="acc-codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ul>
      <div class="actions">
        {href && (
          <a class="button" href={href} download="copydesk-recovery-codes.txt">
            Download the recovery codes
          </a>
        )}
        <button type="button" onClick={onSaved}>
          I have saved them
        </button>
      </div>
    </div>
  );
}

function TurnOff({ onDone }: { onDone: () => void }) {
  const [proof, setProof] = useState("");
  const [password, setPassword] = useState("");
  const { errors, busy, submit } = useSubmit(["code", "password"], async () => {
    await api.post("/api/auth/2fa/disable", { body: proof.trim() ? { code: proof.replace(/\s+/g, "") } : { password } });
    onDone();
  });
  return (
    <form onSubmit={submit} noValidate aria-labelledby="acc-2fa-off">
      <h3 id="acc-2fa-off">Turn it off</h3>
      <p class="muted">Signing in will ask for the password alone, and the remaining recovery codes stop working. Prove it is you with a code or your password.</p>
      <div class="row">
        <Field label="Code or recovery code" name="code" value={proof} onValue={setProof} error={errors.fields.code} autoComplete="one-time-code" />
        <Field label="Or your password" name="password" type="password" value={password} onValue={setPassword} error={errors.fields.password} autoComplete="current-password" />
      </div>
      {errors.form && <Alert>{sentence(errors.form)}</Alert>}
      <div class="actions">
        <button type="submit" class="danger" disabled={busy || (!proof.trim() && !password)}>
          Turn off two-factor authentication
        </button>
      </div>
    </form>
  );
}

// device names a browser and system from a User-Agent, roughly.
export function device(ua: string): string {
  if (!ua) return "Unknown device";
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrom(e|ium)\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : (/^([\w.-]+)\//.exec(ua)?.[1] ?? "A client");
  const os = /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS" : /Windows/.test(ua) ? "Windows" : /Mac OS X|Macintosh/.test(ua) ? "macOS" : /Linux|X11/.test(ua) ? "Linux" : "";
  return os ? `${browser} on ${os}` : browser;
}

function Sessions() {
  const list = useResource((signal) => api.get("/api/auth/sessions", { query: { per_page: 200 }, signal }), []);
  const [asking, setAsking] = useState<Session | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const ending = useAction();
  const items = list.data?.data.items ?? [];
  const name = (s: Session) => `${device(s.user_agent)}${s.ip ? ", " + s.ip : ""}`;
  const end = (s: Session) =>
    ending.act(async () => {
      await api.del("/api/auth/sessions/{id}", { path: { id: s.id } });
      setAsking(null);
      if (s.current) {
        session.signedOut("You ended this device's session.");
        navigate("/", true);
        return;
      }
      setNotice(`Ended the session of ${name(s)}.`);
      list.reload();
    });
  return (
    <section aria-labelledby="acc-sessions">
      <h2 id="acc-sessions">Sessions</h2>
      <p class="muted">Where you are signed in. Ending a session signs that device out at its next request.</p>
      {list.error && <Alert>{list.error}</Alert>}
      <Notice text={notice} />
      {items.length > 0 && (
        <Table aria-labelledby="acc-sessions" cols={["Device", "Place", "Last seen", "Signed in", ""]}>
          {items.map((s) => (
            <tr key={s.id}>
              <th scope="row">
                {device(s.user_agent)}
                {s.current && <strong> (this device)</strong>}
              </th>
              <td>{s.ip || "—"}</td>
              <td>
                <When at={s.last_seen_at} />
              </td>
              <td>
                <When at={s.created_at} />
              </td>
              <td>
                <button type="button" onClick={() => setAsking(s)} aria-expanded={asking?.id === s.id}>
                  End<span class="visually-hidden"> the session of {name(s)}{s.current ? " (this device)" : ""}</span>
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {asking && (
        <Confirm label="Confirm ending the session" action="End the session" busy={ending.busy !== null} onConfirm={() => void end(asking)} onCancel={() => setAsking(null)}
          question={
            <>
              End the session of {name(asking)}, last seen <When at={asking.last_seen_at} />?
              {asking.current ? " This is the device you are using: you will be signed out here." : " That device will have to sign in again."}
            </>
          } />
      )}
      {ending.error && <Alert>{ending.error}</Alert>}
    </section>
  );
}

const lifetimes = [["", "Never"], ["7", "In 7 days"], ["30", "In 30 days"], ["90", "In 90 days"], ["365", "In a year"]] as const;

// Tokens are the personal API tokens: each acts as the user (at most their
// role and environments), optionally read-only, limited to some
// environments or expiring. The secret is shown once, when made.
function Tokens() {
  const list = useResource((signal) => api.get("/api/auth/tokens", { query: { per_page: 200 }, signal }), []);
  const envs = useResource((signal) => api.get("/api/environments", { query: { per_page: 200 }, signal }), []);
  const [making, setMaking] = useState(false);
  const [made, setMade] = useState<Schemas["apiTokenCreatedResponse"] | null>(null);
  const [asking, setAsking] = useState<ApiToken | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const revoking = useAction();
  const items = list.data?.data.items ?? [];
  const envName = new Map((envs.data?.data.items ?? []).map((e) => [e.id, e.name]));
  const access = (t: ApiToken) =>
    `${t.read_only ? "Read only" : "Read and write"}, ${t.environment_ids ? t.environment_ids.flatMap((id) => (id === null ? [] : [envName.get(id) ?? `environment ${id}`])).join(", ") || "no environment" : "all your environments"}`;
  async function revoke(t: ApiToken) {
    setNotice(null);
    if (await revoking.act(() => api.del("/api/auth/tokens/{id}", { path: { id: t.id } }))) {
      setAsking(null);
      if (made?.id === t.id) setMade(null);
      setNotice(`Revoked the token ${t.name}.`);
      list.reload();
    }
  }
  return (
    <section aria-labelledby="acc-tokens">
      <h2 id="acc-tokens">API tokens</h2>
      <p class="muted">
        A personal token lets a script or another tool call the API as you (Authorization: Bearer …), with at most your role and environments. It cannot manage
        tokens, your password, e-mail, two-factor authentication or sessions.
      </p>
      {list.error && <Alert>{list.error}</Alert>}
      <Notice text={notice} />
      {made && <NewToken token={made} onDone={() => setMade(null)} />}
      {list.data && items.length === 0 && <p>No API tokens.</p>}
      {items.length > 0 && (
        <Table aria-labelledby="acc-tokens" cols={["Name", "Access", "Last used", "Expires", "Made", ""]}>
          {items.map((t) => (
            <tr key={t.id}>
              <th scope="row">
                {t.name} <code class="muted">{t.prefix}…</code>
              </th>
              <td>{access(t)}</td>
              <td>{t.last_used_at ? <When at={t.last_used_at} /> : "Never"}</td>
              <td>
                {t.expires_at ? <When at={t.expires_at} /> : "Never"}
                {t.expired && <strong> (expired)</strong>}
              </td>
              <td>
                <When at={t.created_at} />
              </td>
              <td>
                <button type="button" onClick={() => setAsking(t)} aria-expanded={asking?.id === t.id}>
                  Revoke<span class="visually-hidden"> the token {t.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {asking && (
        <Confirm label="Confirm revoking the token" action="Revoke the token" busy={revoking.busy !== null} onConfirm={() => void revoke(asking)} onCancel={() => setAsking(null)}
          question={
            <>
              Revoke the token {asking.name} ({asking.prefix}…), last used {asking.last_used_at ? <When at={asking.last_used_at} /> : "never"}? Whatever uses it is refused
              from its next request; this cannot be undone.
            </>
          } />
      )}
      {revoking.error && <Alert>{revoking.error}</Alert>}
      {making ? (
        <MakeToken envs={envs.data?.data.items ?? []} onCancel={() => setMaking(false)}
          onMade={(t) => { setMaking(false); setNotice(null); setMade(t); list.reload(); }} />
      ) : (
        <div class="actions">
          <button type="button" onClick={() => setMaking(true)}>
            New API token
          </button>
        </div>
      )}
    </section>
  );
}

function MakeToken({ envs, onMade, onCancel }: { envs: Schemas["environmentResponse"][]; onMade: (t: Schemas["apiTokenCreatedResponse"]) => void; onCancel: () => void }) {
  const [name, setName] = useState("");
  const [readOnly, setReadOnly] = useState(false);
  const [days, setDays] = useState("");
  const [ids, setIds] = useState<Set<number>>(new Set());
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const { errors, busy, submit } = useSubmit(["name", "expires_at", "environment_ids", "read_only"], async () => {
    const body: Schemas["apiTokenRequest"] = { name: name.trim(), read_only: readOnly };
    if (days) body.expires_at = new Date(Date.now() + Number(days) * 86_400_000).toISOString().replace(/\.\d+Z$/, "Z");
    if (ids.size) body.environment_ids = [...ids];
    onMade((await api.post("/api/auth/tokens", { body })).data);
  });
  return (
    <form onSubmit={submit} noValidate aria-labelledby="acc-token-new">
      <h3 id="acc-token-new">New API token</h3>
      <Field label="Name" name="name" value={name} onValue={setName} error={errors.fields.name} hint="What it is for, e.g. n8n publishing." inputRef={first} autoComplete="off" />
      <label class="check-label block">
        <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.currentTarget.checked)} />
        Read only (GET requests only)
      </label>
      <Select label="Expires" name="expires_at" value={days} onValue={setDays} options={lifetimes} error={errors.fields.expires_at} />
      {envs.length > 0 && (
        <Checks legend="Environments (none chosen: all yours, now and later)" options={envs.map((e) => [e.id, e.name] as const)} chosen={ids} onChosen={setIds}
          error={errors.fields.environment_ids} />
      )}
      <FormActions error={errors.form} disabled={busy} onCancel={onCancel}>
        Make the token
      </FormActions>
    </form>
  );
}

// NewToken shows a token's secret this once, with a copy button.
function NewToken({ token, onDone }: { token: Schemas["apiTokenCreatedResponse"]; onDone: () => void }) {
  const [copied, setCopied] = useState("");
  const copy = () =>
    navigator.clipboard.writeText(token.token).then(
      () => setCopied("Copied."),
      () => setCopied("Could not copy: select the token and copy it."),
    );
  return (
    <div class="card" role="region" aria-labelledby="acc-token-secret">
      <h3 id="acc-token-secret">Your new token {token.name}</h3>
      <p role="alert">Copy it now: it is shown only this once. Anyone who has it can act as you; keep it as you would a password.</p>
      <p>
        <code class="secret">{token.token}</code>
      </p>
      <div class="actions">
        <button type="button" onClick={() => void copy()}>
          Copy the token
        </button>
        <span role="status" class="muted small">
          {copied}
        </span>
        <button type="button" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </div>
  );
}

const licenseState = { inactive: "No license activated", active: "Active", expired: "Expired", invalid: "Invalid" } as const;

function License() {
  const l = useResource((signal) => api.get("/api/auth/license", { signal }), []);
  const d = l.data?.data;
  const [key, setKey] = useState("");
  const [notice, setNotice] = useState<string | null>(null);
  const [asking, setAsking] = useState(false);
  const activate = useSubmit(["license_key"], async () => {
    setNotice(null);
    l.set(await api.post("/api/auth/license/activate", { body: { license_key: key.trim() } }));
    setKey("");
    setNotice("License activated.");
  });
  const off = useAction();
  async function deactivate() {
    setNotice(null);
    if (await off.act(async () => l.set(await api.post("/api/auth/license/deactivate", {})))) {
      setAsking(false);
      setNotice("License deactivated: its key can be activated again, here or on another account.");
    }
  }
  const held = d && d.state !== "inactive";
  return (
    <section aria-labelledby="acc-license">
      <h2 id="acc-license">License</h2>
      {l.error && <Alert>{l.error}</Alert>}
      <Notice text={notice} />
      {d && (
        <dl class="facts">
          <dt>State</dt>
          <dd>
            {licenseState[d.state]}
            {d.reason && <span class="muted"> ({d.reason})</span>}
          </dd>
          {d.plan && (
            <>
              <dt>Plan</dt>
              <dd>{d.plan}</dd>
            </>
          )}
          {d.licensee && (
            <>
              <dt>Licensee</dt>
              <dd>{d.licensee}</dd>
            </>
          )}
          <dt>Seats</dt>
          <dd>
            {num(d.seats_in_use)} in use{d.seats != null ? ` of ${num(d.seats)}` : ""}
          </dd>
          {d.expires_at && (
            <>
              <dt>Expires</dt>
              <dd>
                <When at={d.expires_at} />
              </dd>
            </>
          )}
        </dl>
      )}
      {d && !held && (
        <form onSubmit={activate.submit} noValidate aria-labelledby="acc-license-activate">
          <h3 id="acc-license-activate">Activate a license key</h3>
          <TextArea label="License key" name="license_key" value={key} onValue={setKey} error={activate.errors.fields.license_key} rows={3}
            hint="The key you were sent, starting with CDL1. It is checked here, without going online." />
          {activate.errors.form && <Alert>{sentence(activate.errors.form)}</Alert>}
          <div class="actions">
            <button type="submit" class="primary" disabled={activate.busy || !key.trim()}>
              Activate the license
            </button>
          </div>
        </form>
      )}
      {held && (
        <>
          <p class="muted">To use another key, deactivate this one first.</p>
          <div class="actions">
            <button type="button" class="danger" onClick={() => setAsking(true)} aria-expanded={asking}>
              Deactivate the license…
            </button>
          </div>
        </>
      )}
      {asking && d && (
        <Confirm label="Confirm deactivation" action="Deactivate the license" busy={off.busy !== null} onConfirm={() => void deactivate()} onCancel={() => setAsking(false)}
          question={
            <>
              Deactivate the license{d.licensee ? ` of ${d.licensee}` : ""}{d.plan ? ` (plan ${d.plan}${d.seats != null ? `, ${num(d.seats)} seats` : ""})` : ""}? Your account will have no
              license until a key is activated again; the key is freed for use here or on another account.
            </>
          } />
      )}
      {off.error && <Alert>{off.error}</Alert>}
    </section>
  );
}
