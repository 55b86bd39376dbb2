// The choosers' loaders over the API's lists, and the names of items a
// list refers to by id (a topic action's action, a mapping's topic) when
// they are not on a loaded page: remembered from every page read, else
// asked once by id.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api/client";
import { choicePageSize, type ChoiceLoader, type ChoicePage } from "./Chooser";

type Kind = "topic" | "action" | "document";

const names: Record<Kind, Map<number, string>> = { topic: new Map(), action: new Map(), document: new Map() };
const pending = new Map<string, Promise<string | undefined>>();

/** Notes the names of a page of items read elsewhere (an admin list). */
export function remember(kind: Kind, items: { id: number; name: string }[]) {
  for (const i of items) names[kind].set(i.id, i.name);
}

async function fetchName(kind: Kind, id: number): Promise<string | undefined> {
  const opts = { params: { path: { id } } };
  if (kind === "topic") return (await api.GET("/api/Topics/{id}", opts)).data?.name;
  if (kind === "action") return (await api.GET("/api/Actions/{id}", opts)).data?.name;
  return (await api.GET("/api/Documents/{id}", opts)).data?.title;
}

/** The name of the item kind/id, remembered or asked of the API once. */
export function nameOf(kind: Kind, id: number): Promise<string | undefined> {
  const known = names[kind].get(id);
  if (known !== undefined) return Promise.resolve(known);
  const key = `${kind}:${id}`;
  let p = pending.get(key);
  if (!p) {
    p = fetchName(kind, id).then((n) => {
      pending.delete(key);
      if (n !== undefined) names[kind].set(id, n);
      return n;
    });
    pending.set(key, p);
  }
  return p;
}

/** Renders the name of kind/id (its id until it is known). */
export function useName(kind: Kind, id: number): string {
  const [, setTick] = useState(0);
  const known = names[kind].get(id);
  useEffect(() => {
    if (known !== undefined) return;
    let stale = false;
    void nameOf(kind, id).then(() => {
      if (!stale) setTick((n) => n + 1);
    });
    return () => {
      stale = true;
    };
  }, [kind, id, known]);
  return known ?? `#${id}`;
}

function page<T>(data: { items: T[]; totalCount: number; totalPages: number } | undefined, choice: (t: T) => { value: string; label: string }): ChoicePage | null {
  return data ? { items: data.items.map(choice), totalCount: data.totalCount, totalPages: data.totalPages } : null;
}

/** Topics by name, searched by the API's `name` (contains, any case). */
export const topicChoices: ChoiceLoader = async (pageNumber, q) => {
  const { data } = await api.GET("/api/Topics", { params: { query: { pageNumber, pageSize: choicePageSize, sort: "name", name: q || undefined } } });
  if (data) remember("topic", data.items.map((t) => ({ id: t.topicID, name: t.name })));
  return page(data, (t) => ({ value: String(t.topicID), label: t.name }));
};

export const actionChoices: ChoiceLoader = async (pageNumber) => {
  const { data } = await api.GET("/api/Actions", { params: { query: { pageNumber, pageSize: choicePageSize } } });
  if (data) remember("action", data.items.map((a) => ({ id: a.actionID, name: a.name })));
  return page(data, (a) => ({ value: String(a.actionID), label: a.name }));
};

export const documentChoices: ChoiceLoader = async (pageNumber) => {
  const { data } = await api.GET("/api/Documents", { params: { query: { pageNumber, pageSize: choicePageSize } } });
  if (data) remember("document", data.items.map((d) => ({ id: d.documentID, name: d.title })));
  return page(data, (d) => ({ value: String(d.documentID), label: d.title }));
};

/** The live channels (the API filters deleted ones out). */
export const channelChoices: ChoiceLoader = async (pageNumber) => {
  const { data } = await api.GET("/api/Channels", { params: { query: { pageNumber, pageSize: choicePageSize, isDeleted: false } } });
  return page(data, (c) => ({ value: String(c.channelID), label: c.name }));
};

/** Accounts tickets can be assigned to (integrations are left out of the
 * page, so a page may hold fewer than it could). */
export function accountChoices(except?: number): ChoiceLoader {
  return async (pageNumber) => {
    const { data } = await api.GET("/api/Accounts", { params: { query: { pageNumber, pageSize: choicePageSize } } });
    if (!data) return null;
    const items = data.items.filter((a) => a.role !== "integration" && a.accountID !== except);
    return { items: items.map((a) => ({ value: String(a.accountID), label: a.name })), totalCount: data.totalCount, totalPages: data.totalPages };
  };
}

export const topicLabel = (v: string) => nameOf("topic", Number(v));

/** The name of kind/id as text. */
export function Name(props: { kind: Kind; id: number }) {
  return <>{useName(props.kind, props.id)}</>;
}
