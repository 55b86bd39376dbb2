// A select over a paged API list, so that a customer with more than a
// page of topics, accounts or channels can choose any of them: the first
// page (100), "More" loads the next one, and where the API filters by
// text (topics by name) a search box asks it as one types. A chosen value
// that is not among the loaded items keeps its option (its label asked of
// labelOf).
import { useEffect, useState } from "preact/hooks";

export interface Choice {
  value: string;
  label: string;
}

export interface ChoicePage {
  items: Choice[];
  totalCount: number;
  totalPages: number;
}

/** One page of choices for the search text q ("" = all); null when the
 * API refused (the chooser keeps what it has). */
export type ChoiceLoader = (pageNumber: number, q: string) => Promise<ChoicePage | null>;

export const choicePageSize = 100;

export interface ChooserProps {
  id: string;
  /** The label of the select (rendered by the caller with for={id}). */
  label: string;
  value: string;
  onChange: (value: string) => void;
  load: ChoiceLoader;
  /** The first option (value ""), e.g. "Any topic" or "Choose a topic". */
  placeholder: string;
  /** Options before the loaded ones (e.g. "Me", "Nobody"). */
  fixed?: Choice[];
  /** The API filters by text: a search box asks it as one types. */
  search?: boolean;
  labelOf?: (value: string) => Promise<string | undefined>;
  /** Read the list again when this changes (an item was added). */
  reloadKey?: unknown;
  disabled?: boolean;
  invalid?: boolean;
  describedBy?: string;
}

export function Chooser(props: ChooserProps) {
  const [q, setQ] = useState("");
  const [items, setItems] = useState<Choice[]>([]);
  const [pageNumber, setPageNumber] = useState(1);
  const [total, setTotal] = useState({ count: 0, pages: 0 });
  const [busy, setBusy] = useState(false);
  const [extra, setExtra] = useState<Choice | null>(null);

  useEffect(() => {
    let stale = false;
    // Typing waits a moment; the first read does not.
    const timer = setTimeout(
      () => {
        void props.load(1, q.trim()).then((p) => {
          if (stale || p === null) return;
          setItems(p.items);
          setPageNumber(1);
          setTotal({ count: p.totalCount, pages: p.totalPages });
        });
      },
      q === "" ? 0 : 250,
    );
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [q, props.reloadKey]);

  const more = async () => {
    setBusy(true);
    const p = await props.load(pageNumber + 1, q.trim());
    setBusy(false);
    if (p === null) return;
    const seen = new Set(items.map((i) => i.value));
    setItems([...items, ...p.items.filter((i) => !seen.has(i.value))]);
    setPageNumber(pageNumber + 1);
    setTotal({ count: p.totalCount, pages: p.totalPages });
  };

  const v = props.value;
  const known = v === "" || items.some((i) => i.value === v) || (props.fixed ?? []).some((i) => i.value === v);
  useEffect(() => {
    if (known || !props.labelOf || extra?.value === v) return;
    let stale = false;
    void props.labelOf(v).then((label) => {
      if (!stale && label !== undefined) setExtra({ value: v, label });
    });
    return () => {
      stale = true;
    };
  }, [v, known]);

  return (
    <div class="chooser" data-loaded={items.length} data-total={total.count}>
      {props.search && (
        <>
          <label for={`${props.id}-q`} class="visually-hidden">
            Search: {props.label}
          </label>
          <input
            id={`${props.id}-q`}
            class="chooser-search"
            type="search"
            placeholder="Search…"
            value={q}
            disabled={props.disabled}
            onInput={(e) => setQ(e.currentTarget.value)}
          />
        </>
      )}
      <select
        id={props.id}
        value={v}
        disabled={props.disabled}
        aria-invalid={props.invalid ? true : undefined}
        aria-describedby={props.describedBy}
        onChange={(e) => props.onChange(e.currentTarget.value)}
      >
        <option value="">{props.placeholder}</option>
        {(props.fixed ?? []).map((i) => (
          <option key={`fixed-${i.value}`} value={i.value}>
            {i.label}
          </option>
        ))}
        {!known && (
          <option value={v}>{extra?.value === v ? extra.label : `#${v}`}</option>
        )}
        {items.map((i) => (
          <option key={i.value} value={i.value}>
            {i.label}
          </option>
        ))}
      </select>
      {pageNumber < total.pages && (
        <button type="button" class="secondary small chooser-more" disabled={busy || props.disabled} onClick={() => void more()}>
          More<span class="visually-hidden"> {props.label}</span> ({items.length} of {total.count})
        </button>
      )}
    </div>
  );
}
