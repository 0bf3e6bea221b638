// The Astro folder test of the environments screen: asks the server what
// it finds at the environment's saved Astro folder (POST
// /api/environments/{id}/astro/test) and lists each check with its
// outcome and the server's detail.
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Alert, errorText } from "../ui";

type Result = Schemas["astroTestResponse"];

const checkNames: Record<Result["checks"][number]["name"], string> = {
  folder: "Project folder",
  allowed: "Allowed on this server",
  astro_project: "Astro project",
  content_folder: "Content folder",
  writable: "Writable by the server",
  astro_command: "astro command installed",
};

const statusWords = { ok: "ok", failed: "failed", warning: "warning", skipped: "not checked" } as const;

export function AstroFolderTest({ envId, saved }: { envId: number; saved: boolean }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function run() {
    setBusy(true);
    setResult(null);
    setError(null);
    try {
      setResult((await api.post("/api/environments/{id}/astro/test", { path: { id: envId } })).data);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <>
      <button type="button" onClick={run} disabled={busy || !saved}>
        Test the Astro folder
      </button>
      {!saved && <p class="muted small">Save a project folder first: the test looks at the saved configuration.</p>}
      {result && (
        <div role="status" class="test-outcome">
          <p>{result.ok ? "The Astro folder works" : "The Astro folder test failed"}: {result.detail}</p>
          <ul aria-label="What the server found">
            {result.checks.map((c) => (
              <li key={c.name}>
                <strong>{checkNames[c.name]}: {statusWords[c.status]}</strong> <span class="small">{c.detail}</span>
              </li>
            ))}
          </ul>
        </div>
      )}
      {error && <Alert>{error}</Alert>}
    </>
  );
}
