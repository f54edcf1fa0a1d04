// An admin's one-step endpoint: a model of the pool and the primitives it may run, in one
// request (POST /api/pools/{id}/endpoints with `primitives`), so the pool answers at once.
// A refusal is shown beside the field it names.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";

import { api, fieldErrors } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Endpoint, Primitive } from "../../api/types";
import { ErrorText, FieldNote } from "../../components/States";

interface Draft {
  name: string;
  model: string;
  apiBase: string;
  apiKey: string;
  input: string;
  output: string;
  primitives: string[];
}

const INITIAL: Draft = { name: "", model: "", apiBase: "", apiKey: "", input: "", output: "", primitives: ["direct"] };
const FIELDS = ["name", "model", "api_base", "api_key", "input_cost_per_mtok", "output_cost_per_mtok", "primitives"];

const price = (text: string): number | null => (text.trim() === "" ? null : Number(text));

export function NewEndpoint({ poolId, primitives }: { poolId: number; primitives: Primitive[] }) {
  const id = useId();
  const client = useQueryClient();
  const [draft, setDraft] = useState<Draft>(INITIAL);
  const add = useMutation({
    mutationFn: () =>
      api<Endpoint>(`/api/pools/${poolId}/endpoints`, {
        method: "POST",
        body: {
          name: draft.name.trim(),
          model: draft.model.trim(),
          api_base: draft.apiBase.trim(),
          ...(draft.apiKey ? { api_key: draft.apiKey } : {}),
          input_cost_per_mtok: price(draft.input),
          output_cost_per_mtok: price(draft.output),
          primitives: draft.primitives,
        },
      }),
    onSuccess: () => {
      setDraft(INITIAL);
      void client.invalidateQueries({ queryKey: keys.pools.endpoints(poolId) });
      void client.invalidateQueries({ queryKey: keys.pools.admissibility(poolId) });
    },
  });
  const change = (patch: Partial<Draft>) => {
    setDraft((now) => ({ ...now, ...patch }));
    if (add.isError) add.reset();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate();
  };
  const errors = fieldErrors(add.error);
  const elsewhere = Object.keys(errors).every((field) => !FIELDS.includes(field));
  const note = (field: string) => `${id}-${field}`;
  const invalid = (field: string) =>
    errors[field] ? { "aria-invalid": true, "aria-describedby": note(field) } : { "aria-invalid": undefined };
  const text = (label: string, field: string, key: keyof Draft, extra: Record<string, unknown> = {}) => (
    <div className="field">
      <label>
        {label}
        <input value={draft[key]} onChange={(e) => change({ [key]: e.target.value })} {...extra} {...invalid(field)} />
      </label>
      <FieldNote id={note(field)} message={errors[field]} />
    </div>
  );

  return (
    <details className="panel">
      <summary>Add an endpoint</summary>
      <form className="stack" onSubmit={submit} aria-label="Add an endpoint">
        <div className="row">
          {text("Name", "name", "name", { required: true, maxLength: 100, placeholder: "gpt-4o-mini" })}
          {text("Model (litellm)", "model", "model", { required: true, placeholder: "openai/gpt-4o-mini" })}
          {text("API base", "api_base", "apiBase", { placeholder: "http://127.0.0.1:8001/v1 (optional)" })}
          {text("API key", "api_key", "apiKey", {
            type: "password",
            autoComplete: "off",
            placeholder: "stored encrypted",
          })}
          {text("Input $/M tokens", "input_cost_per_mtok", "input", { type: "number", min: 0, step: "any" })}
          {text("Output $/M tokens", "output_cost_per_mtok", "output", { type: "number", min: 0, step: "any" })}
        </div>
        <fieldset {...invalid("primitives")}>
          <legend>Primitives it may run</legend>
          {primitives.map((primitive) => (
            <label key={primitive.id} className="inline">
              <input
                type="checkbox"
                checked={draft.primitives.includes(primitive.name)}
                onChange={(e) =>
                  change({
                    primitives: e.target.checked
                      ? [...draft.primitives, primitive.name]
                      : draft.primitives.filter((name) => name !== primitive.name),
                  })
                }
              />
              &nbsp;{primitive.name}&nbsp;&nbsp;
            </label>
          ))}
          <FieldNote id={note("primitives")} message={errors.primitives} />
        </fieldset>
        {add.isError && elsewhere && <ErrorText error={add.error} />}
        {add.isSuccess && <p role="status">Added; the pool answers through it now.</p>}
        <div className="row">
          <button type="submit" className="primary" disabled={add.isPending}>
            {add.isPending ? "Adding…" : "Add endpoint"}
          </button>
        </div>
      </form>
    </details>
  );
}
