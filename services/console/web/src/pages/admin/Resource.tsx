// The admin pages' building blocks: a page reserved to admins, and one
// editable list (a page of items with paging, a form to create or edit one,
// delete in two clicks) that each resource fills with its typed API calls.
// Field errors of a problem+json answer are shown at their field; a refused
// delete's problem next to its row.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { asProblem, problemText, type Problem } from "../../api/client";
import { DeleteButtons, DeleteRefusal, useRowDeletes } from "../../components/RowDelete";
import type { Me } from "../../App";
import { Chooser, type ChooserProps } from "../../components/Chooser";

/** Renders its children for an admin only: an agent gets a plain page and
 * no API call is made for it. */
export function AdminOnly(props: { me: Me | null; title: string; children: ComponentChildren }) {
  if (props.me === null) return null;
  if (props.me.account.role !== "admin") {
    return (
      <section>
        <h1>{props.title}</h1>
        <p class="error" role="alert">
          Admins only: this page is for administrators.
        </p>
      </section>
    );
  }
  return <>{props.children}</>;
}

export type Values = Record<string, string | boolean>;

export interface FieldSpec {
  name: string;
  label: string;
  type?: "text" | "textarea" | "checkbox" | "select" | "chooser" | "number" | "email" | "url";
  options?: { value: string; label: string }[];
  /** For type "chooser": a select over a paged API list. */
  chooser?: Pick<ChooserProps, "load" | "placeholder" | "search" | "labelOf" | "reloadKey">;
  /** Shown only when this holds for the form's values. */
  showIf?: (v: Values) => boolean;
  createOnly?: boolean;
  editOnly?: boolean;
}

export interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

export interface Page<T> {
  items: T[];
  totalCount: number;
  totalPages: number;
}

export interface ResourceSpec<T> {
  /** Prefix of the element ids and the section's class. */
  id: string;
  title: string;
  noun: string;
  key: (item: T) => number;
  columns: { label: string; cell: (item: T) => ComponentChildren }[];
  fields: FieldSpec[];
  empty: Values;
  toValues: (item: T) => Values;
  list: (pageNumber: number) => Promise<Answer<Page<T>>>;
  create: (v: Values) => Promise<Answer<T>>;
  update?: (id: number, v: Values) => Promise<Answer<unknown>>;
  remove: (id: number) => Promise<Answer<unknown>>;
  rowActions?: (item: T) => ComponentChildren;
  /** Called after every change (so that other lists can reload). */
  onChanged?: () => void;
  /** Changes when the list must be read again (a filter changed). */
  reloadKey?: string | number;
  heading?: "h2" | "h3";
}

export const pageSize = 20;

export const str = (v: Values, k: string): string => {
  const x = v[k];
  return typeof x === "string" ? x.trim() : "";
};
export const bool = (v: Values, k: string): boolean => v[k] === true;
export const num = (v: Values, k: string): number => Number(str(v, k));
/** An optional id field: null when empty. */
export const optID = (v: Values, k: string): number | null => (str(v, k) === "" ? null : num(v, k));

export function Pager(props: { pageNumber: number; totalPages: number; onPage: (n: number) => void; label: string }) {
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" disabled={props.pageNumber <= 1} onClick={() => props.onPage(props.pageNumber - 1)}>
        Previous
      </button>
      <span>
        Page {props.pageNumber} of {Math.max(props.totalPages, 1)}
      </span>
      <button type="button" disabled={props.pageNumber >= props.totalPages} onClick={() => props.onPage(props.pageNumber + 1)}>
        Next
      </button>
    </nav>
  );
}

export function Resource<T>(props: { spec: ResourceSpec<T> }) {
  const s = props.spec;
  const [page, setPage] = useState<Page<T> | null>(null);
  const [pageNumber, setPageNumber] = useState(1);
  const [listProblem, setListProblem] = useState<Problem | null>(null);
  const [reload, setReload] = useState(0);
  const [editing, setEditing] = useState<number | null>(null);
  const [values, setValues] = useState<Values>(s.empty);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const deletes = useRowDeletes();

  useEffect(() => {
    let stale = false;
    void s.list(pageNumber).then(({ data, error, response }) => {
      if (stale) return;
      if (data) {
        // The last item of the last page was deleted: show the page before.
        if (data.items.length === 0 && pageNumber > 1) setPageNumber(Math.max(1, data.totalPages));
        setPage(data);
        setListProblem(null);
      } else setListProblem(asProblem(error, response));
    });
    return () => {
      stale = true;
    };
  }, [pageNumber, reload, s.reloadKey]);

  const changed = () => {
    setReload((n) => n + 1);
    s.onChanged?.();
  };
  const reset = () => {
    setEditing(null);
    setValues(s.empty);
    setProblem(null);
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    setDone(null);
    const ans = editing !== null && s.update ? await s.update(editing, values) : await s.create(values);
    setBusy(false);
    // A PUT answers 204 without a body.
    if (ans.response.ok) {
      setDone(editing !== null ? `The ${s.noun} is saved.` : `The ${s.noun} is created.`);
      reset();
      changed();
    } else setProblem(asProblem(ans.error, ans.response));
  };
  const remove = async (id: number) => {
    deletes.start();
    setDone(null);
    const { error, response } = await s.remove(id);
    if (response.ok) {
      setDone(`The ${s.noun} is deleted.`);
      if (editing === id) reset();
      changed();
    } else deletes.refuse(id, asProblem(error, response));
  };

  const H = s.heading ?? "h2";
  const err = (f: string) => problem?.errors?.[f];
  const fields = s.fields.filter(
    (f) => !(f.createOnly && editing !== null) && !(f.editOnly && editing === null) && (f.showIf?.(values) ?? true),
  );
  const set = (name: string, v: string | boolean) => setValues({ ...values, [name]: v });
  const fieldIDs = new Set(fields.map((f) => f.name));
  const otherErrors = Object.entries(problem?.errors ?? {}).filter(([k]) => !fieldIDs.has(k));

  return (
    <section class={`resource ${s.id}`} aria-labelledby={`${s.id}-heading`}>
      <H id={`${s.id}-heading`}>{s.title}</H>
      {listProblem && (
        <p class="error" role="alert">
          {problemText(listProblem)}
        </p>
      )}
      {page && (
        <>
          <p class="summary" data-total={page.totalCount}>
            {page.items.length > 0 && page.items.length < page.totalCount
              ? `${(pageNumber - 1) * pageSize + 1}–${(pageNumber - 1) * pageSize + page.items.length} of `
              : ""}
            {page.totalCount} {s.noun}
            {page.totalCount === 1 ? "" : "s"}
          </p>
          {page.items.length > 0 && (
            <table class="tickets">
              <thead>
                <tr>
                  {s.columns.map((c) => (
                    <th scope="col" key={c.label}>
                      {c.label}
                    </th>
                  ))}
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((it) => {
                  const id = s.key(it);
                  return (
                    <tr key={id} data-id={id}>
                      {s.columns.map((c) => (
                        <td key={c.label}>{c.cell(it)}</td>
                      ))}
                      <td>
                        <div class="row-actions">
                        {s.rowActions?.(it)}
                        {s.update && (
                          <button type="button" class="secondary edit" onClick={() => {
                            setEditing(id);
                            setValues(s.toValues(it));
                            setProblem(null);
                          }}>
                            Edit
                          </button>
                        )}
                        <DeleteButtons id={id} deletes={deletes} onConfirm={() => void remove(id)} />
                        </div>
                        <DeleteRefusal id={id} deletes={deletes} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
          {page.totalPages > 1 && (
            <Pager pageNumber={pageNumber} totalPages={page.totalPages} onPage={setPageNumber} label={`${s.title} pages`} />
          )}
        </>
      )}
      <form class="admin-form" onSubmit={(e) => void submit(e)} noValidate aria-label={editing !== null ? `Edit the ${s.noun}` : `New ${s.noun}`}>
        <p class="form-title">{editing !== null ? `Edit the ${s.noun} ${editing}` : `New ${s.noun}`}</p>
        {fields.map((f) => {
          const id = `${s.id}-${f.name}`;
          const e = err(f.name);
          const aria = { "aria-invalid": e ? true : undefined, "aria-describedby": e ? `${id}-error` : undefined };
          const v = values[f.name];
          const sv = typeof v === "string" ? v : "";
          let input;
          if (f.type === "checkbox") {
            input = <input id={id} type="checkbox" checked={v === true} onChange={(ev) => set(f.name, ev.currentTarget.checked)} {...aria} />;
          } else if (f.type === "select") {
            input = (
              <select id={id} value={sv} onChange={(ev) => set(f.name, ev.currentTarget.value)} {...aria}>
                {(f.options ?? []).map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            );
          } else if (f.type === "chooser" && f.chooser) {
            input = (
              <Chooser
                id={id}
                label={f.label}
                value={sv}
                onChange={(nv) => set(f.name, nv)}
                invalid={!!e}
                describedBy={aria["aria-describedby"]}
                {...f.chooser}
              />
            );
          } else if (f.type === "textarea") {
            input = <textarea id={id} rows={4} value={sv} onInput={(ev) => set(f.name, ev.currentTarget.value)} {...aria} />;
          } else {
            input = <input id={id} type={f.type ?? "text"} value={sv} onInput={(ev) => set(f.name, ev.currentTarget.value)} {...aria} />;
          }
          return (
            <div class={f.type === "checkbox" ? "field field-check" : "field"} key={f.name}>
              <label for={id}>{f.label}</label>
              {input}
              {e && (
                <p id={`${id}-error`} class="field-error">
                  {e}
                </p>
              )}
            </div>
          );
        })}
        {problem && (!problem.errors || otherErrors.length > 0) && (
          <p class="error" role="alert">
            {problemText(problem)}
            {otherErrors.map(([k, m]) => ` ${k}: ${m}.`)}
          </p>
        )}
        {done && (
          <p class="ok" role="status">
            {done}
          </p>
        )}
        <div class="form-buttons">
          <button type="submit" disabled={busy}>
            {editing !== null ? "Save" : `Create the ${s.noun}`}
          </button>
          {editing !== null && (
            <button type="button" class="secondary" onClick={reset}>
              Cancel
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
