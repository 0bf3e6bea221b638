// Backups (super_admin): take a snapshot of the database (progress while
// the server copies and checks it), the snapshots with their size and
// their verification (checked when taken; "Verify" checks a file again,
// and the list keeps when each was last verified and how it went),
// download one (fetched with the Authorization header, handed over as a
// blob: address: the token is in no URL), delete one, and restore one
// after typing its name: the restore replaces the whole database and ends
// every session, so the sign-in dialog follows it. The restore is asked for
// as a stream of its stages (Accept: text/event-stream), which the screen
// lists as they happen. A backup file can be uploaded (with its progress;
// the server checks it before it is listed), and the schedule changed.
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, download, url, type Schemas } from "../api/client";
import { post as postStream } from "../api/sse";
import { Confirm } from "../confirm";
import { session } from "../session";
import { Alert, errorText, Field, Heading, num, Pager, Table, useAction, useResource, useSubmit, When } from "../ui";
import { FileUpload, useUpload } from "../upload";

type Backup = Schemas["backupResponse"];
type Verified = Schemas["backupVerifyResponse"];
const kindWord: Record<Backup["kind"], string> = { manual: "Taken here", scheduled: "Scheduled", "pre-restore": "Before a restore", uploaded: "Uploaded", cli: "Command line" };

type Stage = NonNullable<Schemas["restoreStage"]["stage"]>;
// The stages of a restore in order, as the screen names them, each with
// the event that says it is over (the next one's, or done). The check runs
// before the server's first event ("checked" says it passed).
const stages: { key: Stage | "check"; words: string; until: Stage | "done" }[] = [
  { key: "check", words: "Checking the file", until: "checked" },
  { key: "waiting", words: "Waiting for requests in flight", until: "safety_snapshot" },
  { key: "safety_snapshot", words: "Keeping a safety copy of the current database", until: "swapping" },
  { key: "swapping", words: "Putting the backup in place", until: "keeping_safety_snapshot" },
  { key: "keeping_safety_snapshot", words: "Checking and listing the safety copy", until: "done" },
];

// stageAt is the index in stages of the stage an event says has begun.
function stageAt(s: Stage): number {
  return s === "checked" ? 1 : stages.findIndex((x) => x.key === s);
}

// Stages lists a restore's stages: each is marked done when the server has
// said so, so the list stays true even when several events arrive at once.
function Stages({ told, now }: { told: string[]; now: number }) {
  return (
    <ol aria-label="Stages of the restore" class="small">
      {stages.map((st, i) => {
        const done = told.includes(st.until);
        return (
          <li key={st.key} aria-current={!done && i === now ? "step" : undefined} class={done ? undefined : "muted"}>
            {st.words}
            {done ? " — done" : i === now ? " — now" : ""}
          </li>
        );
      })}
    </ol>
  );
}

export function size(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let i = 0;
  for (; v >= 1024 && i < units.length - 1; i++) v /= 1024;
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function Backups() {
  const [page, setPage] = useState(1);
  const list = useResource((signal) => api.get("/api/backup", { query: { page, per_page: 50 }, signal }), [page]);
  const schedule = useResource((signal) => api.get("/api/backup/schedule", { signal }), []);
  const [taking, setTaking] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [restoring, setRestoring] = useState<Backup | null>(null);
  const [stage, setStage] = useState(0);
  // The events of the last restore's stages, as told (and "done").
  const [told, setTold] = useState<string[] | null>(null);
  const [restored, setRestored] = useState<Schemas["backupRestoreResponse"] | null>(null);
  // The problem a verification found on this screen (the list keeps only
  // whether it passed, and when).
  const [verified, setVerified] = useState<Record<string, Verified>>({});

  // After a restore every session has ended: once signed in again, the
  // list is read from the restored database.
  useEffect(
    () =>
      session.subscribe(() => {
        if (session.current) list.reload();
      }),
    [],
  );

  if (session.user?.role !== "super_admin") {
    return (
      <>
        <Heading>Backups</Heading>
        <p>Backups are kept by super administrators: ask one to take or restore a backup.</p>
      </>
    );
  }

  async function take() {
    setTaking(true);
    setError(null);
    setNote(null);
    try {
      const r = await api.post("/api/backup", {});
      setNote(`Backup ${r.data.name} taken (${size(r.data.size)}) and checked.`);
      list.reload();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setTaking(false);
    }
  }

  async function restore(b: Backup) {
    setError(null);
    setNote(null);
    setRestoring(b);
    setStage(0);
    setTold([]);
    const token = session.current?.access_token;
    try {
      let done: Schemas["backupRestoreResponse"] | null = null;
      let failed: string | null = null;
      await postStream(url("/api/backup/{name}/restore", { name: b.name }), undefined, (e) => {
        if (e.event === "stage") {
          const st = (e.data as Schemas["restoreStage"]).stage;
          if (st) {
            setStage(stageAt(st));
            setTold((t) => [...(t ?? []), st]);
          }
        } else if (e.event === "done") {
          done = e.data as Schemas["backupRestoreResponse"];
          setStage(stages.length);
          setTold((t) => [...(t ?? []), "done"]);
        } else if (e.event === "error") {
          failed = (e.data as Schemas["restoreFailure"]).detail ?? "the restore failed";
        }
      }, new AbortController().signal);
      if (failed) throw new ApiError(0, failed);
      if (!done) throw new ApiError(0, "the answer ended before the restore said it was done: read the list again to see where it stands");
      setRestored(done);
      // The server has ended every session, this one too: say so now
      // rather than at the next request.
      if (token) session.end(token, `The database was restored from ${b.name}, which ended every session.`);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setRestoring(null);
    }
  }

  const items = list.data?.data.items ?? [];
  const total = list.data?.data.total ?? 0;
  const s = schedule.data?.data;
  return (
    <>
      <Heading>Backups</Heading>
      <p class="muted">
        A backup is a consistent copy of the whole database, checked before it is listed. Keep the server's <code>secret.key</code> with your backups: credentials in
        them cannot be read without it.
      </p>
      <div class="row">
        <button type="button" onClick={() => void take()} disabled={taking || restoring !== null}>
          Take a backup
        </button>
      </div>
      {taking && (
        <div class="progress" role="status">
          <label for="backup-progress">Taking a backup: copying the database and checking it…</label>
          <progress id="backup-progress" /> <Elapsed />
        </div>
      )}
      {restoring && (
        <div class="progress">
          <p role="status">
            Restoring {restoring.name}: {stage < stages.length ? stages[stage]!.words.toLowerCase() : "done"}…
          </p>
          <progress aria-label={`Restoring ${restoring.name}`} max={stages.length} value={stage} />
          <Stages told={told ?? []} now={stage} />
          <p class="small muted">
            Requests wait meanwhile. <Elapsed />
          </p>
        </div>
      )}
      {restored && (
        <div role="status" class="card">
          <p>
            <strong>Restored {restored.restored.name}.</strong> The database as it was just before is kept as {restored.safety_snapshot.name}. Every session and API token
            has ended: everyone signs in again, and API tokens must be made again.
          </p>
          {told && <Stages told={told} now={stage} />}
        </div>
      )}
      {note && <p role="status">{note}</p>}
      {error && <Alert>{error}</Alert>}
      <Upload disabled={taking || restoring !== null} onUploaded={(b) => { setNote(`Backup ${b.name} uploaded (${size(b.size)}) and checked.`); list.reload(); }} />
      {s && <ScheduleForm s={s} onSaved={() => { setNote("The backup schedule is saved."); schedule.reload(); }} />}
      {s && (
        <p class="small muted">
          {s.enabled ? (
            <>
              Scheduled backups: {s.spec} (UTC), keeping the last {num(s.retention)}; next <When at={s.next_run_at} />.
            </>
          ) : (
            "Scheduled backups are off."
          )}
          {s.last_error && <span class="field-error"> The last scheduled backup failed: {s.last_error}</span>}
        </p>
      )}
      {list.error && <Alert>{list.error}</Alert>}
      {list.data && total === 0 && <p class="empty">No backups yet. Take the first one with “Take a backup”: it takes a few seconds.</p>}
      {items.length > 0 && (
        <Table aria-label="Backups" cols={["Name", "Taken", "Kind", "Size", "Verification", "Actions"]}>
          {items.map((b) => (
            <Row key={b.name} b={b} verified={verified[b.name]} disabled={restoring !== null || taking}
              onVerified={(v) => { setVerified({ ...verified, [b.name]: v }); list.reload(); }}
              onRestore={() => void restore(b)}
              onDeleted={() => { setNote(`Backup ${b.name} deleted.`); list.reload(); }} />
          ))}
        </Table>
      )}
      <Pager label="Pages of backups" page={page} pages={Math.ceil(total / 50)} onPage={setPage} />
    </>
  );
}

// Elapsed counts the seconds since it appeared (outside the live region's
// words: a screen reader is not told each second).
function Elapsed() {
  const [n, setN] = useState(0);
  useEffect(() => {
    const t = window.setInterval(() => setN((x) => x + 1), 1000);
    return () => window.clearInterval(t);
  }, []);
  return <span class="muted small" aria-hidden="true">{n} s</span>;
}

function Row({ b, verified, disabled, onVerified, onRestore, onDeleted }: {
  b: Backup;
  verified: Verified | undefined;
  disabled: boolean;
  onVerified: (v: Verified) => void;
  onRestore: () => void;
  onDeleted: () => void;
}) {
  const [asking, setAsking] = useState<"restore" | "delete" | null>(null);
  const { busy, error, run: act } = useAction<"verify" | "download" | "delete">();
  const verify = () => act("verify", async () => onVerified((await api.post("/api/backup/{name}/verify", { path: { name: b.name } })).data));
  const get = () => act("download", () => download(url("/api/backup/{name}/download", { name: b.name }), b.name, "application/vnd.sqlite3"));
  const remove = () =>
    act("delete", async () => {
      await api.del("/api/backup/{name}", { path: { name: b.name } });
      setAsking(null);
      onDeleted();
    });
  return (
    <tr>
      <th scope="row">
        {b.name}
        <br />
        <span class="muted small">
          copydesk {b.copydesk_version}, schema {b.schema_version}
        </span>
      </th>
      <td>
        <When at={b.created_at} />
      </td>
      <td>{kindWord[b.kind]}</td>
      <td class="num">{size(b.size)}</td>
      <td>
        {busy === "verify" ? (
          <span role="status">Verifying…</span>
        ) : b.verified_at && b.verified_ok !== null ? (
          b.verified_ok ? (
            <span>
              Verified <When at={b.verified_at} />: intact
            </span>
          ) : (
            <span class="field-error">
              Damaged (verified <When at={b.verified_at} />)
              {verified && !verified.ok && <>: {verified.problem || (verified.sha256_matches ? "the integrity check failed" : "the file changed since it was taken")}</>}
            </span>
          )
        ) : (
          <span class="muted">Checked when taken; not verified since</span>
        )}
        <br />
        <span class="muted small" title={b.sha256}>
          SHA-256 {b.sha256.slice(0, 12)}…
        </span>
      </td>
      <td>
        <div class="actions">
          <button type="button" onClick={() => void verify()} disabled={disabled || busy !== null}>
            Verify<span class="visually-hidden"> {b.name}</span>
          </button>
          <button type="button" onClick={() => void get()} disabled={disabled || busy !== null}>
            Download<span class="visually-hidden"> {b.name}</span>
          </button>
          <button type="button" onClick={() => setAsking("restore")} disabled={disabled || busy !== null} aria-expanded={asking === "restore"}>
            Restore…<span class="visually-hidden"> {b.name}</span>
          </button>
          <button type="button" onClick={() => setAsking("delete")} disabled={disabled || busy !== null} aria-expanded={asking === "delete"}>
            Delete…<span class="visually-hidden"> {b.name}</span>
          </button>
        </div>
        {busy === "download" && <span role="status">Downloading…</span>}
        {error && <Alert>{error}</Alert>}
        {asking === "delete" && (
          <Confirm label={`Delete ${b.name}`} action="Delete the backup" busy={busy === "delete"} onConfirm={() => void remove()} onCancel={() => setAsking(null)}
            question={<p>Delete the backup {b.name} ({size(b.size)}, taken {new Date(b.created_at).toLocaleString()})? Its file is removed from the server; this cannot be undone.</p>} />
        )}
        {asking === "restore" && (
          <Confirm label={`Restore ${b.name}`} action="Restore this backup" typed={b.name} busy={disabled}
            onConfirm={() => { setAsking(null); onRestore(); }} onCancel={() => setAsking(null)}
            question={
              <>
                <p>
                  <strong>This replaces the whole database</strong> — every environment, user, keyword, post, campaign, agent, credential and setting — with its state
                  of {new Date(b.created_at).toLocaleString()}. Everything changed since then is lost from the live database (a safety backup of it is taken first).
                </p>
                <p>Every session ends, yours included, and every API token is revoked. Files written for Astro sites are not rolled back.</p>
              </>
            } />
        )}
      </td>
    </tr>
  );
}

// Upload sends a backup file (a copydesk database) with its progress; the
// server checks it before it lists it, and says what is wrong otherwise.
function Upload({ disabled, onUploaded }: { disabled: boolean; onUploaded: (b: Backup) => void }) {
  const u = useUpload("/api/backup/upload", { onSent: (r) => onUploaded(r.data) });
  return (
    <section aria-labelledby="backup-upload" class="card">
      <h2 id="backup-upload">Upload a backup</h2>
      <FileUpload u={u} label="Backup file (.db)" accept=".db,application/vnd.sqlite3,application/x-sqlite3" disabled={disabled}
        hint="A backup downloaded from a copydesk server. It is checked (a whole copydesk database this version can open) before it is listed; restoring it is a separate step." />
    </section>
  );
}

// ScheduleForm changes the backup schedule: on or off, when (a cron
// expression in UTC, or @daily, @every 6h) and how many scheduled backups
// are kept. The server's words show beside the field they name.
function ScheduleForm({ s, onSaved }: { s: Schemas["backupScheduleResponse"]; onSaved: () => void }) {
  const [enabled, setEnabled] = useState(s.enabled);
  const [spec, setSpec] = useState(s.spec);
  const [retention, setRetention] = useState(String(s.retention));
  const { errors, busy, submit } = useSubmit(["spec", "retention"], async () => {
    const n = Number(retention);
    if (!Number.isInteger(n)) throw new ApiError(422, "retention: a whole number of backups");
    await api.put("/api/backup/schedule", { body: { enabled, spec, retention: n } });
    onSaved();
  });
  return (
    <form aria-labelledby="backup-schedule" class="card" onSubmit={(e) => void submit(e)}>
      <h2 id="backup-schedule">Schedule</h2>
      <label>
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Take backups on a schedule
      </label>
      <Field label="When (UTC)" name="spec" value={spec} onValue={setSpec} error={errors.fields.spec}
        hint="A cron expression in UTC (0 3 * * * is every day at 03:00), or @daily, @hourly, @every 6h; at least 5 minutes apart." />
      <Field label="Scheduled backups kept" name="retention" type="number" value={retention} onValue={setRetention}
        error={errors.fields.retention} hint="The oldest scheduled backups beyond this many are deleted; others stay until you delete them." />
      {errors.form && <Alert>{errors.form}</Alert>}
      <button type="submit" disabled={busy}>
        Save the schedule
      </button>
    </form>
  );
}
