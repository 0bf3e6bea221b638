// Deleting one message of a conversation (DELETE /api/openchat/messages/{id}):
// the server deletes it with every message below it, so the confirmation
// names the message and what goes with it, and what stays (the other
// versions beside it).
import { useState } from "preact/hooks";
import { api, type Schemas } from "../api/client";
import { Confirm } from "../confirm";
import { Alert, errorText } from "../ui";

type Message = Schemas["chatMessageResponse"];

const clip = (s: string) => (s.length > 60 ? s.slice(0, 60).trimEnd() + "…" : s);

export function DeleteMessage({ m, n, below, onDeleted }: { m: Message; n: number; below: number; onDeleted: (deleted: number) => void }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const who = m.role === "user" ? "your message" : "the model's reply";
  const others = m.sibling_ids.length - 1;
  async function remove() {
    setBusy(true);
    setError(null);
    try {
      const r = await api.del("/api/openchat/messages/{id}", { path: { id: m.id } });
      setOpen(false);
      onDeleted(r.data.deleted);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <>
      <button type="button" class="small danger" onClick={() => setOpen(!open)} aria-expanded={open}>
        Delete message {n}…
      </button>
      {open && (
        <Confirm label={`Confirm deleting message ${n}`} action={`Delete message ${n}`} busy={busy} onConfirm={() => void remove()} onCancel={() => setOpen(false)}
          question={
            <p>
              Delete message {n}, {who} “{clip(m.content)}”,
              {below > 0 ? ` and everything below it: the ${below} later message${below === 1 ? "" : "s"} of this branch and any replies or versions branching from them?` : " and any replies or versions branching from it?"}
              {others > 0 ? ` The other ${others === 1 ? "version" : `${others} versions`} beside it stay${others === 1 ? "s" : ""}.` : ""}
              {" "}The conversation then shows the branch of the newest message left. This cannot be undone.
            </p>
          } />
      )}
      {error && <Alert>{error}</Alert>}
    </>
  );
}
