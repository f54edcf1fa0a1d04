// The collections, newest first: each one's progress (cells ended of all), spend against its
// budget, status and message, and its Cancel or Resume buttons.
import type { Collection } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { usd, when } from "../../lib/format";
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

export function CollectionTable({ collections }: { collections: Collection[] }) {
  return (
    <Scrollable className="table-wrap" label="Collections table">
      <table className="collections-table">
        <thead>
          <tr>
            <th scope="col">Collection</th>
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Spent</th>
            <th scope="col">Message</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {collections.map((collection) => (
            <tr
              key={collection.id}
              data-testid="collection-row"
              data-collection-id={collection.id}
              data-status={collection.status}
            >
              <th scope="row">
                <div>
                  #{collection.id} {collection.name}
                </div>
                <div className="small muted">
                  {collection.pool_name} · {collection.max_concurrency} in flight per endpoint
                  {collection.calibrates ? " · calibrates the pool" : ""}
                </div>
                <div className="small muted">{when(collection.created_at)}</div>
              </th>
              <td>
                <span className={`status ${collection.status}`} data-testid="collection-status">
                  {collection.status}
                </span>
              </td>
              <td>
                <CollectionProgress collection={collection} />
              </td>
              <td className="num" data-testid="collection-spend">
                {usd(collection.spent_usd)} <span className="muted">of {usd(collection.budget_usd)}</span>
              </td>
              <td className={collection.status === "failed" ? "collection-message failed" : "collection-message"}>
                {collection.message || "–"}
              </td>
              <td>
                <Actions collection={collection} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}
