// Import preference pairs from a JSONL file (as GET /api/preferences/export writes them):
// all of the file or, if any line is bad, nothing, with each bad line named.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";

import { ApiError, api } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { ImportResult } from "../../api/types";
import { ErrorText } from "../../components/States";

/** The line-numbered problems of a refused file, in line order; none for other errors. */
export function badLines(error: unknown): { line: number; message: string }[] {
  if (!(error instanceof ApiError) || error.status !== 422) return [];
  return error.errors
    .filter((e): e is { line: number; message: string } => typeof e.line === "number")
    .sort((a, b) => a.line - b.line);
}

/** A file's text, read as UTF-8 (FileReader: jsdom's File has no text()). */
function readText(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(typeof reader.result === "string" ? reader.result : "");
    reader.onerror = () => reject(new Error(`Could not read ${file.name}.`));
    reader.readAsText(file);
  });
}

function bySource(result: ImportResult): string {
  return Object.entries(result.by_source)
    .map(([source, count]) => `${count} ${source.replaceAll("_", " ")}`)
    .join(", ");
}

export function ImportPairs() {
  const client = useQueryClient();
  const inputId = useId();
  const [file, setFile] = useState<File | null>(null);
  const upload = useMutation({
    mutationFn: async (chosen: File) =>
      api<ImportResult>("/api/preferences/import", {
        method: "POST",
        text: { content: await readText(chosen), type: "application/x-ndjson" },
      }),
    onSuccess: () => void client.invalidateQueries({ queryKey: keys.preferences.all }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (file) upload.mutate(file);
  };
  const lines = badLines(upload.error);

  return (
    <section className="panel stack" aria-labelledby="label-import-h" data-testid="import-pairs">
      <h2 className="label-h" id="label-import-h">
        Import JSONL
      </h2>
      <p className="muted">
        Pairs from a JSONL file, one per line, in the format the export writes (prompt, chosen, rejected, source; plans
        optional). Each becomes a task, its two runs and a pair whose winner is known. A file with any bad line imports
        nothing.
      </p>
      <form className="row label-import" onSubmit={submit}>
        <label htmlFor={inputId}>JSONL file</label>
        <input
          id={inputId}
          type="file"
          accept=".jsonl,.ndjson,.txt,application/x-ndjson,text/plain"
          onChange={(event) => {
            setFile(event.target.files?.[0] ?? null);
            upload.reset();
          }}
        />
        <button type="submit" className="primary" disabled={!file || upload.isPending}>
          {upload.isPending ? "Importing…" : "Import"}
        </button>
      </form>
      {upload.isSuccess && (
        <p role="status" data-testid="import-result">
          ✓ Imported {upload.data.pairs} pair{upload.data.pairs === 1 ? "" : "s"} ({bySource(upload.data)}):{" "}
          {upload.data.tasks} tasks and {upload.data.runs} runs.
        </p>
      )}
      {lines.length > 0 ? (
        <div className="error" role="alert" data-testid="import-errors">
          <p>
            Nothing was imported: {lines.length} bad line{lines.length === 1 ? "" : "s"} in {file?.name ?? "the file"}.
          </p>
          <ul>
            {lines.map(({ line, message }) => (
              <li key={line} data-line={line}>
                <b>Line {line}</b>: {message}
              </li>
            ))}
          </ul>
        </div>
      ) : (
        <ErrorText error={upload.error} />
      )}
    </section>
  );
}
