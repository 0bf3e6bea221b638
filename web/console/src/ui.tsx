// Small pieces every screen uses: links that stay in the page, labelled
// fields that show the server's detail beside the field it names, and a
// hook that loads data and ignores answers that came too late.
import type { AnchorHTMLAttributes, ComponentChildren, Ref, TableHTMLAttributes } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";
import { ApiError, SessionEnded } from "./api/client";
import { moved, onLinkClick } from "./router";
import { session, sentence } from "./session";

export function Link({ onFollow, ...props }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; onFollow?: () => void }) {
  return (
    <a
      {...props}
      onClick={(e) => {
        onFollow?.();
        onLinkClick(e);
      }}
    />
  );
}

// What every labelled control takes: its label, name and value, and the
// server's words about it (error).
export type ValueProps = {
  label: string;
  name: string;
  value: string;
  onValue: (v: string) => void;
  error?: string | undefined;
  hint?: string;
};

type FieldProps = ValueProps & {
  type?: "text" | "email" | "password" | "search" | "url" | "number";
  autoComplete?: string;
  required?: boolean;
  spellcheck?: boolean;
  inputRef?: Ref<HTMLInputElement>;
};

// Labelled is a control with its label, an optional hint and the server's
// words about it (error), read out with it through aria-describedby.
export function Labelled({ label, hint, error, control }: {
  label: string;
  hint?: string | undefined;
  error?: string | undefined;
  control: (a: { id: string; "aria-invalid": "true" | undefined; "aria-describedby": string | undefined }) => ComponentChildren;
}) {
  const id = useId();
  const described = [hint ? id + "-hint" : "", error ? id + "-error" : ""].filter(Boolean).join(" ");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint && (
        <p class="hint" id={id + "-hint"}>
          {hint}
        </p>
      )}
      {control({ id, "aria-invalid": error ? "true" : undefined, "aria-describedby": described || undefined })}
      {error && (
        <p class="field-error" id={id + "-error"}>
          {sentence(error)}
        </p>
      )}
    </div>
  );
}

// Field is a labelled input; error (the server's words) is read out with it.
export function Field({ label, name, value, onValue, error, hint, inputRef, type, ...rest }: FieldProps) {
  return (
    <Labelled label={label} hint={hint} error={error} control={(a) => (
      <input
        {...rest}
        {...a}
        // Preact types an input by its type; the attributes given here fit them all.
        type={(type ?? "text") as "text"}
        ref={inputRef}
        name={name}
        value={value}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
    )} />
  );
}

// FormErrors splits an error between the fields it names and the form.
export type FormErrors = { fields: Record<string, string>; form: string | null };

export function formErrors(err: unknown, fields: readonly string[]): FormErrors {
  if (err instanceof SessionEnded) return { fields: {}, form: null }; // the sign-in dialog says it
  if (err instanceof ApiError) {
    if (err.field && err.fieldMessage && fields.includes(err.field)) return { fields: { [err.field]: err.fieldMessage }, form: null };
    return { fields: {}, form: err.detail };
  }
  return { fields: {}, form: err instanceof Error ? err.message : String(err) };
}

export const noErrors: FormErrors = { fields: {}, form: null };

export function Alert({ children }: { children: ComponentChildren }) {
  return (
    <p class="alert" role="alert">
      {children}
    </p>
  );
}

// Notice says what the last action did (text), read out when it changes;
// nothing while there is nothing to say.
export function Notice({ text }: { text: string | null }) {
  if (!text) return null;
  return (
    <p class="notice" role="status">
      {text}
    </p>
  );
}

export type Resource<T> = { data: T | null; error: string | null; loading: boolean; reload: () => void; set: (v: T) => void };

// useResource loads what fn fetches, again when deps change; a reply to an
// older call is dropped. A session that ended shows no error here: the
// sign-in dialog is on screen.
export function useResource<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Resource<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [n, setN] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    setLoading(true);
    setError(null);
    fn(ac.signal).then(
      (v) => {
        if (ac.signal.aborted) return;
        setData(v);
        setLoading(false);
      },
      (e: unknown) => {
        if (ac.signal.aborted || e instanceof SessionEnded) return;
        setError(e instanceof Error ? sentence(e.message) : String(e));
        setLoading(false);
      },
    );
    return () => ac.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { data, error, loading, reload, set: setData };
}

// Heading is a screen's h1; it takes focus when the screen opens in the
// page, so a screen reader announces the new screen and Tab starts from it.
export function Heading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (moved) ref.current?.focus({ preventScroll: true });
  }, []);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <>—</>;
  const d = new Date(at);
  return <time dateTime={at}>{dateTime.format(d)}</time>;
}

const money = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", maximumFractionDigits: 2 });
const cents = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 4 });
// usd is an amount in dollars; below a dollar it keeps up to four decimals
// (a model call costs fractions of a cent).
export function usd(n: number | null | undefined): string {
  if (n == null) return "—";
  return n !== 0 && Math.abs(n) < 1 ? cents.format(n) : money.format(n);
}

// canEdit says whether the signed-in user's role may change content (an
// editor or an administrator); a viewer gets no button that would fail
// with 403.
export function canEdit(): boolean {
  const r = session.user?.role;
  return r === "editor" || r === "admin" || r === "super_admin";
}

// isAdmin says whether the signed-in user may use the administration
// (admin or super_admin); the navigation shows it only to them.
export function isAdmin(): boolean {
  const r = session.user?.role;
  return r === "admin" || r === "super_admin";
}

// NewButton is a list's "New …" button that opens its form: for editors,
// while the form is not open already (shown).
export function NewButton({ shown, onClick, children }: { shown: boolean; onClick: () => void; children: ComponentChildren }) {
  if (!shown) return null;
  return (
    <div class="actions">
      <button type="button" onClick={onClick}>
        {children}
      </button>
    </div>
  );
}

type SelectProps = ValueProps & { options: readonly (readonly [string, string])[] };

// Select is a labelled choice; like Field, it shows the server's words
// about it beside it.
export function Select({ label, name, value, onValue, options, error, hint }: SelectProps) {
  return (
    <Labelled label={label} hint={hint} error={error} control={(a) => (
      <select {...a} name={name} value={value} onChange={(e) => onValue(e.currentTarget.value)}>
        {options.map(([v, l]) => (
          <option key={v} value={v}>
            {l}
          </option>
        ))}
      </select>
    )} />
  );
}

// errorText is what to show of a failed action: nothing for an ended
// session (the sign-in dialog says it), else the server's words.
export function errorText(e: unknown): string | null {
  if (e instanceof SessionEnded) return null;
  return e instanceof Error ? sentence(e.message) : String(e);
}

// useDebounced is value once it has stayed the same for ms.
export function useDebounced<T>(value: T, ms = 300): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = window.setTimeout(() => setV(value), ms);
    return () => window.clearTimeout(t);
  }, [value, ms]);
  return v;
}

const count = new Intl.NumberFormat();
export function num(n: number | null | undefined): string {
  return n == null ? "—" : count.format(n);
}

// Checks is a fieldset of checkboxes, one an option ([value, label]); the
// values checked are the set chosen, and error (the server's words about
// the choice) is read out with the fieldset.
export function Checks<T>({ legend, options, chosen, onChosen, error }: {
  legend: string;
  options: readonly (readonly [T, ComponentChildren])[];
  chosen: ReadonlySet<T>;
  onChosen: (next: Set<T>) => void;
  error?: string | undefined;
}) {
  const id = useId();
  return (
    <fieldset aria-describedby={error ? id : undefined}>
      <legend>{legend}</legend>
      {options.map(([v, label]) => (
        <label key={String(v)} class="check-label block">
          <input type="checkbox" checked={chosen.has(v)} onChange={(e) => {
            const next = new Set(chosen);
            if (e.currentTarget.checked) next.add(v);
            else next.delete(v);
            onChosen(next);
          }} />
          {label}
        </label>
      ))}
      {error && (
        <p class="field-error" id={id}>
          {sentence(error)}
        </p>
      )}
    </fieldset>
  );
}

// Thead is a table's header row of column names.
export function Thead({ cols }: { cols: readonly string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

// Table is a table of rows (children) under a header row of column names
// (cols); its other attributes, its accessible name first, are the table's.
export function Table({ cols, children, ...rest }: TableHTMLAttributes<HTMLTableElement> & { cols: readonly string[] }) {
  return (
    <table {...rest}>
      <Thead cols={cols} />
      <tbody>{children}</tbody>
    </table>
  );
}

// TextArea is a labelled multi-line field.
export function TextArea({ label, name, value, onValue, error, hint, rows = 4, readOnly }: ValueProps & { rows?: number; readOnly?: boolean }) {
  return (
    <Labelled label={label} hint={hint} error={error} control={(a) => (
      <textarea {...a} name={name} rows={rows} value={value} readOnly={readOnly} onInput={(e) => onValue(e.currentTarget.value)} />
    )} />
  );
}

// Pager moves between the pages of a list paged by the server; past two
// pages it also goes to the first and the last.
export function Pager({ label, page, pages, onPage }: { label: string; page: number; pages: number; onPage: (p: number) => void }) {
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label={label}>
      {pages > 2 && (
        <button type="button" onClick={() => onPage(1)} disabled={page <= 1}>
          First page
        </button>
      )}
      <button type="button" onClick={() => onPage(page - 1)} disabled={page <= 1}>
        Previous page
      </button>
      <span>
        Page {num(page)} of {num(pages)}
      </span>
      <button type="button" onClick={() => onPage(page + 1)} disabled={page >= pages}>
        Next page
      </button>
      {pages > 2 && (
        <button type="button" onClick={() => onPage(pages)} disabled={page >= pages}>
          Last page
        </button>
      )}
    </nav>
  );
}

// useSubmit is a form's submit handler: it sends (fn), shows the server's
// detail beside the field it names among fields (else at the form), and
// says while it is busy.
export function useSubmit(fields: readonly string[], fn: () => Promise<void>) {
  const [errors, setErrors] = useState<FormErrors>(noErrors);
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setErrors(noErrors);
    try {
      await fn();
    } catch (err) {
      setErrors(formErrors(err, fields));
    } finally {
      setBusy(false);
    }
  }
  return { errors, busy, submit };
}

// FormActions ends a form: the server's words about the form as a whole
// (error), its submit button (children) and, with onCancel, a button that
// cancels the form or what it started, named cancel.
export function FormActions({ error = null, disabled, onCancel, cancel = "Cancel", children }: {
  error?: string | null;
  disabled: boolean;
  onCancel?: (() => void) | undefined;
  cancel?: string;
  children: ComponentChildren;
}) {
  return (
    <>
      {error && <Alert>{sentence(error)}</Alert>}
      <div class="actions">
        <button type="submit" class="primary" disabled={disabled}>
          {children}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            {cancel}
          </button>
        )}
      </div>
    </>
  );
}

// useAction runs one action of a row or a button at a time: which is
// running (busy: the name run was given, or "action" for act), and the
// server's words when one failed (error).
export function useAction<K extends string = "action">() {
  const [busy, setBusy] = useState<K | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function run(what: K, fn: () => Promise<unknown>): Promise<boolean> {
    setBusy(what);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    } finally {
      setBusy(null);
    }
  }
  // act runs an action that needs no name.
  const act = (fn: () => Promise<unknown>) => run("action" as K, fn);
  return { busy, error, setError, run, act };
}
