// Sign-in: e-mail and password, then, when the server says a two-factor
// code is required, a second step for the code or a recovery code. Shown as
// the whole page when nobody is signed in, and as a modal dialog over the
// screen when the server ends a session, so what was typed in that screen
// stays where it was. The page also offers "Create an account" (POST
// /api/auth/register, which the server refuses with its words while an
// admin keeps registration closed), and signs the new account in.
import { useEffect, useRef, useState } from "preact/hooks";
import { send, type Schemas } from "./api/client";
import { focusNextScreen } from "./router";
import { session, sentence, type Token } from "./session";
import { Alert, Field, formErrors, noErrors, useSubmit, type FormErrors } from "./ui";

// The server says so in its detail only (see docs/console.md, API gaps).
const needsCode = (detail: string) => /two-factor code is required/i.test(detail);

type Props = { message?: string | undefined; email?: string | undefined; onSignedIn?: (t: Token) => void };

export function SignInForm({ message, email: initialEmail, onSignedIn }: Props) {
  const [email, setEmail] = useState(initialEmail ?? "");
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [step, setStep] = useState<"password" | "code">("password");
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [busy, setBusy] = useState(false);
  const codeRef = useRef<HTMLInputElement>(null);
  const emailRef = useRef<HTMLInputElement>(null);
  const passwordRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (step === "code") codeRef.current?.focus();
  }, [step]);
  useEffect(() => {
    (initialEmail ? passwordRef : emailRef).current?.focus();
  }, []);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setErrors(noErrors);
    const body: Schemas["loginRequest"] = { email, password };
    if (step === "code") body.totp_code = code.trim();
    try {
      const t = (await send("post", "/api/auth/login", { body, token: false })) as Token;
      focusNextScreen();
      session.signedIn(t);
      onSignedIn?.(t);
    } catch (err) {
      const fe = formErrors(err, ["email", "password", "totp_code"]);
      if (step === "password" && fe.form && needsCode(fe.form)) {
        setStep("code");
        setErrors(noErrors);
      } else setErrors(fe);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form onSubmit={submit} aria-labelledby="signin-title" noValidate>
      <h1 id="signin-title" tabIndex={-1}>
        {step === "code" ? "Two-factor authentication" : "Sign in to copydesk"}
      </h1>
      {message && step === "password" && (
        <p class="notice" role="status">
          {message}
        </p>
      )}
      {step === "password" ? (
        <>
          <Field label="E-mail" name="email" type="email" autoComplete="username" required value={email} onValue={setEmail}
            error={errors.fields.email} inputRef={emailRef} />
          <Field label="Password" name="password" type="password" autoComplete="current-password" required value={password}
            onValue={setPassword} error={errors.fields.password} inputRef={passwordRef} />
        </>
      ) : (
        <>
          <p>Your account uses two-factor authentication. Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
          <Field label="Authentication code or recovery code" name="totp_code" autoComplete="one-time-code" spellcheck={false}
            required value={code} onValue={setCode} error={errors.fields.totp_code} inputRef={codeRef} />
        </>
      )}
      {errors.form && <Alert>{sentence(errors.form)}</Alert>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : step === "code" ? "Verify" : "Sign in"}
        </button>
        {step === "code" && (
          <button type="button" onClick={() => { setStep("password"); setCode(""); setErrors(noErrors); }}>
            Back
          </button>
        )}
      </div>
    </form>
  );
}

export function SignInPage({ message }: { message?: string | undefined }) {
  const [mode, setMode] = useState<"signin" | "register">("signin");
  const [after, setAfter] = useState<{ message: string; email: string } | null>(null);
  useEffect(() => {
    document.title = mode === "register" ? "Create an account · copydesk" : "Sign in · copydesk";
  }, [mode]);
  return (
    <main class="signin-page" id="main">
      <div class="card">
        {mode === "register" ? (
          <RegisterForm onBack={() => setMode("signin")} onMade={(m, email) => { setAfter({ message: m, email }); setMode("signin"); }} />
        ) : (
          <>
            <SignInForm key={after?.email ?? ""} message={after?.message ?? message} email={after?.email} />
            <p class="small">
              New here?{" "}
              <button type="button" class="link" onClick={() => setMode("register")}>
                Create an account
              </button>
            </p>
          </>
        )}
      </div>
    </main>
  );
}

const registerFields = ["full_name", "username", "email", "password"];

// RegisterForm makes an account (a viewer with no environment until an
// admin gives it some) and signs it in; if that sign-in fails, the
// sign-in form opens with the e-mail filled in.
function RegisterForm({ onBack, onMade }: { onBack: () => void; onMade: (message: string, email: string) => void }) {
  const [f, setF] = useState({ full_name: "", username: "", email: "", password: "" });
  const set = (patch: Partial<typeof f>) => setF({ ...f, ...patch });
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const { errors, busy, submit } = useSubmit(registerFields, async () => {
    await send("post", "/api/auth/register", { body: { ...f, full_name: f.full_name.trim() }, token: false });
    let t: Token;
    try {
      t = (await send("post", "/api/auth/login", { body: { email: f.email, password: f.password }, token: false })) as Token;
    } catch {
      onMade("Your account is made: sign in with its e-mail and password.", f.email);
      return;
    }
    focusNextScreen();
    session.signedIn(t);
  });
  return (
    <form onSubmit={submit} aria-labelledby="register-title" noValidate>
      <h1 id="register-title" tabIndex={-1}>
        Create an account
      </h1>
      <p>The account can read what an administrator gives it access to.</p>
      <Field label="Full name" name="full_name" autoComplete="name" value={f.full_name} onValue={(v) => set({ full_name: v })} error={errors.fields.full_name}
        hint="Optional." inputRef={first} />
      <Field label="Username" name="username" autoComplete="username" required value={f.username} onValue={(v) => set({ username: v })} error={errors.fields.username} />
      <Field label="E-mail" name="email" type="email" autoComplete="email" required value={f.email} onValue={(v) => set({ email: v })} error={errors.fields.email} />
      <Field label="Password" name="password" type="password" autoComplete="new-password" required value={f.password} onValue={(v) => set({ password: v })}
        error={errors.fields.password} />
      {errors.form && <Alert>{sentence(errors.form)}</Alert>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Creating the account…" : "Create the account"}
        </button>
        <button type="button" onClick={onBack}>
          Back to sign in
        </button>
      </div>
    </form>
  );
}

// SessionDialog asks for the password again over the screen that was in
// use. The same user carries on where they were; another user starts at
// the list of environments, with nothing of the previous user's screen.
export function SessionDialog({ message, userId, email }: { message: string; userId: number | null; email?: string | undefined }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} class="card" aria-labelledby="signin-title" onCancel={(e) => e.preventDefault()}>
      <SignInForm
        message={message + " Sign in again to carry on: what you typed on this page is kept."}
        email={email}
        onSignedIn={(t) => {
          if (userId !== null && t.user.id !== userId) location.assign("/");
        }}
      />
    </dialog>
  );
}
