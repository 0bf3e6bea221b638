// Confirm asks before an action that deletes or replaces something: it
// names what the action affects (question) and, for what cannot be undone
// at the scale of a whole database, makes the user type a word first
// (typed). It is an inline alertdialog, as the Keywords screen's.
import type { ComponentChildren } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { Field } from "./ui";

export function Confirm({ label, question, action, typed, busy, onConfirm, onCancel }: {
  label: string;
  question: ComponentChildren;
  action: string;
  typed?: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const id = useId();
  const [text, setText] = useState("");
  const first = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (first.current) first.current.focus();
    else box.current?.querySelector<HTMLButtonElement>("button")?.focus();
  }, []);
  const ready = typed === undefined || text.trim() === typed;
  return (
    <div ref={box} class="confirm" role="alertdialog" aria-label={label} aria-describedby={id}
      onKeyDown={(e) => e.key === "Escape" && !busy && onCancel()}>
      <div id={id}>{question}</div>
      {typed !== undefined && (
        <Field label={`Type ${typed} to confirm`} name="confirm" value={text} onValue={setText} autoComplete="off" spellcheck={false} inputRef={first} />
      )}
      <div class="actions">
        <button type="button" class="danger" onClick={onConfirm} disabled={busy || !ready}>
          {action}
        </button>
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </div>
  );
}
