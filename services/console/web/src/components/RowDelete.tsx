import { useState } from "preact/hooks";
import { problemText, type Problem } from "../api/client";

/** The state of a list's row deletes: the row asking for confirmation and
 * the row whose delete the API refused, with its problem. */
export type RowDeletes = {
  confirming: number | null;
  refused: { id: number; problem: Problem } | null;
  ask: (id: number) => void;
  keep: () => void;
  /** Before a delete is sent: no row asks or shows a refusal any more. */
  start: () => void;
  refuse: (id: number, problem: Problem) => void;
};

export function useRowDeletes(): RowDeletes {
  const [confirming, setConfirming] = useState<number | null>(null);
  const [refused, setRefused] = useState<{ id: number; problem: Problem } | null>(null);
  return {
    confirming,
    refused,
    ask: (id) => {
      setConfirming(id);
      setRefused(null);
    },
    keep: () => setConfirming(null),
    start: () => {
      setConfirming(null);
      setRefused(null);
    },
    refuse: (id, problem) => setRefused({ id, problem }),
  };
}

/** A row's Delete button; once pressed, "Really delete?" (which calls
 * onConfirm) and "Keep". */
export function DeleteButtons(props: { id: number; deletes: RowDeletes; onConfirm: () => void }) {
  const { id, deletes } = props;
  if (deletes.confirming === id) {
    return (
      <>
        <button type="button" class="danger delete confirm-delete" onClick={props.onConfirm}>
          Really delete?
        </button>
        <button type="button" class="secondary cancel-delete" onClick={deletes.keep}>
          Keep
        </button>
      </>
    );
  }
  return (
    <button type="button" class="secondary delete" onClick={() => deletes.ask(id)}>
      Delete
    </button>
  );
}

/** The API's refusal of a row's delete, shown under the row. */
export function DeleteRefusal(props: { id: number; deletes: RowDeletes }) {
  const r = props.deletes.refused;
  if (r?.id !== props.id) return null;
  return (
    <p class="row-problem" role="alert">
      Not deleted: {problemText(r.problem)}
    </p>
  );
}
