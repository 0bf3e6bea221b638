// The upload of a file with its progress, as the screens that take one (a
// backup, a keyword export) show it: a labelled file input, a progress bar
// with a cancel while it goes, and the server's words about the file.
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { upload, type Op, type PathsWith, type Success } from "./api/client";
import { formErrors, Labelled } from "./ui";

export type Upload<P extends PathsWith<"post">> = ReturnType<typeof useUpload<P>>;

// useUpload sends one file at a time to path, as a multipart form of
// fields and then the file, with its progress; onSent is told the server's
// answer, which stays as last (with the file's name) until another upload
// starts. A refusal is kept as the server's words about the file (error);
// an upload cancelled, or cut by leaving the screen, says nothing.
export function useUpload<P extends PathsWith<"post">>(path: P, { fields = {}, onSent }: { fields?: Record<string, string>; onSent?: (r: Success<Op<P, "post">>) => void } = {}) {
  const [progress, setProgress] = useState<{ name: string; sent: number } | null>(null);
  const [last, setLast] = useState<{ name: string; answer: Success<Op<P, "post">> } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const ac = useRef<AbortController | null>(null);
  useEffect(() => () => ac.current?.abort(), []);
  async function send(f: File) {
    if (progress) return;
    ac.current = new AbortController();
    setError(null);
    setLast(null);
    setProgress({ name: f.name, sent: 0 });
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append("file", f, f.name);
    try {
      const r = await upload(path, form, (sent) => setProgress({ name: f.name, sent }), ac.current.signal);
      setLast({ name: f.name, answer: r });
      onSent?.(r);
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") return;
      const fe = formErrors(e, ["file"]);
      setError(fe.fields.file ?? fe.form);
    } finally {
      setProgress(null);
      // Emptied, the input takes the same file again.
      if (input.current) input.current.value = "";
    }
  }
  return { progress, last, error, input, send: (f: File) => void send(f), cancel: () => ac.current?.abort() };
}

// FileUpload is the labelled file input of an upload (u, from useUpload),
// disabled while the upload goes, and its progress meanwhile.
export function FileUpload<P extends PathsWith<"post">>({ u, label, hint, accept, disabled = false }: {
  u: Upload<P>;
  label: string;
  hint: string;
  accept: string;
  disabled?: boolean;
}) {
  return (
    <>
      <Labelled label={label} error={u.error ?? undefined} hint={hint}
        control={(a) => (
          <input {...a} ref={u.input} type="file" accept={accept} disabled={disabled || !!u.progress}
            onChange={(e) => {
              const f = e.currentTarget.files?.[0];
              if (f) u.send(f);
            }} />
        )} />
      {u.progress && <UploadProgress name={u.progress.name} sent={u.progress.sent} onCancel={u.cancel} />}
    </>
  );
}

// UploadProgress is a file upload under way: how much is sent, as a
// labelled progress bar in a live region, and a button that cancels it.
function UploadProgress({ name, sent, onCancel }: { name: string; sent: number; onCancel: () => void }) {
  const id = useId();
  return (
    <div class="progress" role="status">
      <label for={id}>
        Uploading {name}: {Math.round(sent * 100)}%
      </label>
      <progress id={id} max={1} value={sent} />
      <button type="button" onClick={onCancel}>
        Cancel upload
      </button>
    </div>
  );
}
