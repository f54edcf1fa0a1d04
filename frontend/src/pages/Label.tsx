// Labeling: the queue for labelers; researchers also get the labelers' agreement, and the
// pairs (export, import, pairing two runs).
import { useId } from "react";
import { useSearchParams } from "react-router";

import { atLeast, useMe } from "../auth";
import { AgreementView } from "./label/Agreement";
import { PairsAndExport } from "./label/Pairs";
import { LabelQueue } from "./label/Queue";
import "./Label.css";

type Tab = "queue" | "agreement" | "export";

const TABS: { id: Tab; label: string }[] = [
  { id: "queue", label: "Queue" },
  { id: "agreement", label: "Agreement" },
  { id: "export", label: "Pairs & export" },
];

export default function LabelPage() {
  const me = useMe();
  const researcher = atLeast(me, "researcher");
  const [params, setParams] = useSearchParams();
  const asked = params.get("tab");
  const tab: Tab = researcher && (asked === "agreement" || asked === "export") ? asked : "queue";
  const idBase = useId();

  const choose = (next: Tab) => {
    const copy = new URLSearchParams(params);
    if (next === "queue") copy.delete("tab");
    else copy.set("tab", next);
    setParams(copy);
  };

  return (
    <div className="stack label-page">
      <h1>Label</h1>
      {researcher && <Tabs tab={tab} idBase={idBase} choose={choose} />}
      <div
        id={`${idBase}-panel`}
        role={researcher ? "tabpanel" : undefined}
        aria-labelledby={researcher ? `${idBase}-tab-${tab}` : undefined}
      >
        {tab === "queue" && <LabelQueue />}
        {tab === "agreement" && <AgreementView />}
        {tab === "export" && <PairsAndExport />}
      </div>
    </div>
  );
}

/** The tabs; the arrow keys move between them (the ARIA tabs pattern). */
function Tabs({ tab, idBase, choose }: { tab: Tab; idBase: string; choose: (tab: Tab) => void }) {
  const move = (key: string) => {
    if (key !== "ArrowRight" && key !== "ArrowLeft") return;
    const index = TABS.findIndex((t) => t.id === tab);
    const next = TABS[(index + (key === "ArrowRight" ? 1 : TABS.length - 1)) % TABS.length];
    choose(next.id);
    document.getElementById(`${idBase}-tab-${next.id}`)?.focus();
  };
  return (
    <div className="label-tabs" role="tablist" aria-label="Labeling">
      {TABS.map((t) => (
        <button
          key={t.id}
          id={`${idBase}-tab-${t.id}`}
          type="button"
          role="tab"
          aria-selected={tab === t.id}
          aria-controls={`${idBase}-panel`}
          tabIndex={tab === t.id ? 0 : -1}
          className={tab === t.id ? "active" : ""}
          onClick={() => choose(t.id)}
          onKeyDown={(event) => move(event.key)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}
