// The collections, newest first, in the studio's JobTable: each one's progress (cells ended
// of all), spend against its budget, status and message, and its Cancel or Resume buttons.
import type { Collection } from "../../api/types";
import { JobTable } from "../../components/JobTable";
import { usd } from "../../lib/format";
import { progressOf } from "../../lib/collections";
import { Actions } from "./Actions";

export function CollectionProgress({ collection }: { collection: Collection }) {
  const { done, total } = progressOf(collection);
  const { failed } = collection.cells;
  const text = `${done} of ${total} cells${failed ? `, ${failed} failed` : ""}`;
  return (
    <div className="collection-progress" data-testid="collection-progress" data-done={done} data-total={total}>
      <div
        className="progress"
        role="progressbar"
        aria-label={`Collection #${collection.id} progress`}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={done}
        aria-valuetext={text}
      >
        <span style={{ width: `${total ? (100 * done) / total : 0}%` }} />
      </div>
      <span className="small">{text}</span>
    </div>
  );
}

function Title({ collection }: { collection: Collection }) {
  return (
    <>
      <div>
        #{collection.id} {collection.name}
      </div>
      <div className="small muted">
        {collection.pool_name} · {collection.max_concurrency} in flight per endpoint
        {collection.calibrates ? " · calibrates the pool" : ""}
      </div>
    </>
  );
}

export function CollectionTable({ collections }: { collections: Collection[] }) {
  return (
    <JobTable
      jobs={collections}
      label="Collections table"
      noun="Collection"
      title={(collection) => <Title collection={collection} />}
      progress={(collection) => <CollectionProgress collection={collection} />}
      trailing={[
        {
          header: "Spent",
          className: "num",
          cell: (collection) => (
            <span data-testid="collection-spend">
              {usd(collection.spent_usd)} <span className="muted">of {usd(collection.budget_usd)}</span>
            </span>
          ),
        },
        { header: "Actions", cell: (collection) => <Actions collection={collection} /> },
      ]}
    />
  );
}
