// The Posts screen's imports, for editors: WordPress — "Import from the
// site" (POST /api/wordpress-posts/import); Astro — "Import from the
// folder" (POST /api/astro-posts/import) and "Reconcile with the folder"
// (POST /api/astro-posts/reconcile: a dry run first, listing the
// differences, then "Fix the differences" with apply, deleting files no
// post has only after a confirmation naming them). Each shows that it runs
// while the server works, then the server's report.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import { Alert, num, Select, useAction } from "../ui";

type WPReport = Schemas["ImportResult"];
type AstroImport = Schemas["astroImportResponse"];
type Reconcile = Schemas["astroReconcileResponse"];
type File = Schemas["astroFileResponse"];

const kindWords: Record<string, string> = {
  missing_file: "File missing",
  file_changed: "File changed outside copydesk",
  row_changed: "Post changed (a category or tag)",
  orphan_file: "File no post has",
  skipped_file: "Skipped (a link)",
};

// Running is the progress shown while a request works on the server.
function Running({ what }: { what: string }) {
  return (
    <div class="progress" role="status">
      <span>{what}</span>
      <progress aria-label={what} />
    </div>
  );
}

const plural = (n: number, one: string, many: string) => `${num(n)} ${n === 1 ? one : many}`;

export function WordPressImport({ env, onDone }: { env: number; onDone: () => void }) {
  const { busy, error, act } = useAction();
  const [report, setReport] = useState<WPReport | null>(null);
  return (
    <section class="card" aria-labelledby="wp-import">
      <h3 id="wp-import">Import</h3>
      <p class="muted small">Brings in the site's posts that are not here yet (every status but trash); posts already here are skipped.</p>
      <div class="actions">
        <button type="button" disabled={!!busy}
          onClick={() => void act(async () => {
            setReport(null);
            setReport((await api.post("/api/wordpress-posts/import", { body: { environment_id: env } })).data);
            onDone();
          })}>
          Import from the site
        </button>
      </div>
      {busy && <Running what="Importing the site's posts…" />}
      {error && <Alert>{error}</Alert>}
      {report && (
        <p class="notice" role="status">
          Import done: {plural(report.imported ?? 0, "post imported", "posts imported")}, {plural(report.skipped ?? 0, "already here skipped", "already here skipped")} ({plural(report.pages ?? 0, "page", "pages")} of the site read).
        </p>
      )}
    </section>
  );
}

function Files({ label, files, reason }: { label: string; files: File[]; reason?: boolean }) {
  if (files.length === 0) return null;
  return (
    <div class="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            <th scope="col">File</th>
            <th scope="col">{reason ? "Why" : "What"}</th>
          </tr>
        </thead>
        <tbody>
          {files.map((f) => (
            <tr key={f.file}>
              <th scope="row">{f.file}</th>
              <td>{reason ? f.reason : [f.kind ? kindWords[f.kind] ?? f.kind : "", f.action].filter(Boolean).join(": ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function AstroImport({ env, onDone }: { env: number; onDone: () => void }) {
  const { busy, error, run } = useAction<"import" | "check" | "fix">();
  const [imported, setImported] = useState<AstroImport | null>(null);
  const [check, setCheck] = useState<Reconcile | null>(null);
  const [orphans, setOrphans] = useState<"keep" | "import" | "delete">("keep");
  const [asking, setAsking] = useState(false);
  const orphanFiles = check && !check.applied ? check.differences.filter((d) => d.kind === "orphan_file").map((d) => d.file) : [];

  const reconcile = (apply: boolean) =>
    run(apply ? "fix" : "check", async () => {
      const query = apply
        ? { environment_id: env, apply: true, orphans, ...(orphans === "delete" && check?.delete_confirmation ? { confirm: check.delete_confirmation } : {}) }
        : { environment_id: env };
      setImported(null);
      setCheck((await api.post("/api/astro-posts/reconcile", { query })).data);
      if (apply) onDone();
    });

  return (
    <section class="card" aria-labelledby="astro-import">
      <h3 id="astro-import">Import and reconcile</h3>
      <p class="muted small">
        Import makes posts of the Markdown files in the content folder that are no post yet (the files stay as they are). Reconcile compares the posts with their files
        (after a restore, or an edit by hand) and lists what differs; nothing changes until "Fix the differences".
      </p>
      <div class="actions">
        <button type="button" disabled={!!busy}
          onClick={() => void run("import", async () => {
            setCheck(null);
            setImported((await api.post("/api/astro-posts/import", { body: { environment_id: env } })).data);
            onDone();
          })}>
          Import from the folder
        </button>
        <button type="button" disabled={!!busy} onClick={() => void reconcile(false)}>
          Reconcile with the folder
        </button>
      </div>
      {busy === "import" && <Running what="Importing the folder's files…" />}
      {busy === "check" && <Running what="Comparing the posts with their files…" />}
      {busy === "fix" && <Running what="Fixing the differences…" />}
      {error && <Alert>{error}</Alert>}
      {imported && (
        <div role="status">
          <p class="notice">
            Import done from {imported.folder}: {plural(imported.imported.length, "file imported", "files imported")}, {plural(imported.skipped.length, "skipped", "skipped")}.
          </p>
          <Files label="Files imported" files={imported.imported} />
          <Files label="Files skipped" files={imported.skipped} reason />
        </div>
      )}
      {check && (
        <div role="status">
          <p class="notice">
            {check.applied ? "Reconciled" : "Compared"} with {check.folder}: {plural(check.in_sync, "post in sync", "posts in sync")},{" "}
            {check.differences.length === 0 ? "no difference." : plural(check.differences.length, check.applied ? "difference handled" : "difference", check.applied ? "differences handled" : "differences")}
            {check.differences.length > 0 && "."}
          </p>
          <Files label={check.applied ? "Differences handled" : "Differences"} files={check.differences} />
        </div>
      )}
      {check && !check.applied && check.differences.length > 0 && (
        <div class="actions">
          {orphanFiles.length > 0 && (
            <Select label="Files no post has" name="orphans" value={orphans} onValue={(v) => setOrphans(v as typeof orphans)}
              options={[["keep", "Keep them"], ["import", "Import them as posts"], ["delete", "Delete them"]]} />
          )}
          <button type="button" class="primary" disabled={!!busy}
            onClick={() => (orphans === "delete" && orphanFiles.length > 0 ? setAsking(true) : void reconcile(true))}>
            Fix the differences
          </button>
        </div>
      )}
      {asking && (
        <Confirm label="Delete files no post has" action={`Delete ${plural(orphanFiles.length, "file", "files")}`} busy={busy === "fix"}
          question={<>Fixing the differences deletes {orphanFiles.join(", ")} from the content folder. No post has {orphanFiles.length === 1 ? "it" : "them"}; a deleted file cannot be brought back from copydesk.</>}
          onConfirm={() => { setAsking(false); void reconcile(true); }}
          onCancel={() => setAsking(false)} />
      )}
    </section>
  );
}
