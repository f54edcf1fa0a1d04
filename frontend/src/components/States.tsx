// Loading, error and empty states, in plain words, the same on every page.
import type { ReactNode } from "react";

import { ApiError } from "../api/client";

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="muted" role="status" aria-live="polite">
      {what}…
    </p>
  );
}

export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : typeof error === "string" ? error : "Something went wrong.";
  const fields = error instanceof ApiError ? error.errors : [];
  return (
    <div className="error" role="alert">
      <p>{message}</p>
      {fields.length > 0 && (
        <ul>
          {fields.map((field) => (
            <li key={`${field.field ?? field.line}: ${field.message}`}>
              <b>{field.field ?? `line ${field.line}`}</b>: {field.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A refusal beside the field it names; the field points at it with `aria-describedby={id}`. */
export function FieldNote({ id, message }: { id: string; message: string | undefined }) {
  if (!message) return null;
  return (
    <p id={id} className="field-note" role="alert">
      {message}
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p>
        <b>{title}</b>
      </p>
      {children}
    </div>
  );
}
