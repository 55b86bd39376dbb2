import { useEffect, useRef, useState } from "preact/hooks";
import { api, asProblem, problemText, type Problem, type Schemas, type Ticket } from "../api/client";
import type { operations } from "../api/schema";
import type { Me } from "../App";
import { Chooser } from "../components/Chooser";
import { accountChoices, channelChoices, topicChoices, topicLabel } from "../components/choices";
import { live } from "../live";
import { linkTo, navigate } from "../router";

type ListQuery = NonNullable<operations["listTickets"]["parameters"]["query"]>;
type Sort = NonNullable<ListQuery["sort"]>;

const statuses = ["Open", "Pending", "Escalated", "Resolved", "Closed"] as const;
const sorts: { value: Sort; label: string }[] = [
  { value: "-dateCreated", label: "Newest first" },
  { value: "dateCreated", label: "Oldest first" },
  { value: "-dateUpdated", label: "Recently updated" },
  { value: "dateUpdated", label: "Least recently updated" },
  { value: "-ticketID", label: "Id, descending" },
  { value: "ticketID", label: "Id, ascending" },
];
const pageSizes = [20, 50, 100];

function num(v: string | null): number | undefined {
  return v !== null && /^\d{1,18}$/.test(v) ? Number(v) : undefined;
}

/** The API query of the inbox's URL query (the filters live in the URL). */
function toListQuery(q: URLSearchParams, me: Me | null): ListQuery {
  const sort = sorts.find((s) => s.value === q.get("sort"))?.value;
  const assignee = q.get("assignee");
  return {
    pageNumber: num(q.get("page")) ?? 1,
    pageSize: num(q.get("pageSize")) ?? 20,
    status: q.get("status") || undefined,
    channelId: num(q.get("channel")),
    endUserId: num(q.get("endUser")),
    customerRepId: assignee === "mine" ? me?.account.accountID : num(assignee),
    topicId: num(q.get("topic")),
    createdFrom: q.get("from") || undefined,
    createdTo: q.get("to") || undefined,
    q: q.get("q") || undefined,
    sort,
  };
}

function fmtDate(s: string): string {
  return new Date(s).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

interface Options {
  channels: Schemas["Channel"][];
  accounts: Schemas["Account"][];
}

/** The first 100 channels and accounts, for the names in the rows (the
 * filters' choosers page through all). */
function useOptions(me: Me | null): Options {
  const [o, setO] = useState<Options>({ channels: [], accounts: [] });
  const admin = me?.account.role === "admin";
  useEffect(() => {
    void Promise.all([
      api.GET("/api/Channels", { params: { query: { pageSize: 100 } } }),
      // Admins only; an agent filters by "mine" or any.
      admin ? api.GET("/api/Accounts", { params: { query: { pageSize: 100 } } }) : Promise.resolve({ data: undefined }),
    ]).then(([c, a]) =>
      setO({
        channels: (c.data?.items ?? []).filter((ch) => !ch.isDeleted),
        accounts: (a.data?.items ?? []).filter((acc) => acc.role !== "integration"),
      }),
    );
  }, [admin]);
  return o;
}

function EndUserFilter(props: { value: string; onChange: (id: string) => void }) {
  const [text, setText] = useState("");
  const [matches, setMatches] = useState<Schemas["EndUser"][]>([]);
  useEffect(() => {
    const t = text.trim();
    if (t === "") {
      setMatches([]);
      return;
    }
    const timer = setTimeout(() => {
      void api.GET("/api/EndUsers", { params: { query: { q: t, pageSize: 20, sort: "name" } } }).then(({ data }) => {
        setMatches(data?.items ?? []);
      });
    }, 250);
    return () => clearTimeout(timer);
  }, [text]);
  return (
    <div class="field">
      <label for="f-enduser-q">End user</label>
      <input
        id="f-enduser-q"
        type="search"
        placeholder="Name or e-mail"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <label for="f-enduser" class="visually-hidden">
        Matching end user
      </label>
      <select id="f-enduser" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">Any end user</option>
        {props.value !== "" && !matches.some((m) => String(m.endUserID) === props.value) && (
          <option value={props.value}>End user #{props.value}</option>
        )}
        {matches.map((m) => (
          <option key={m.endUserID} value={String(m.endUserID)}>
            {m.name || m.email || `#${m.endUserID}`}
            {m.email && m.name ? ` <${m.email}>` : ""}
          </option>
        ))}
      </select>
    </div>
  );
}

/** An agent chooses no other account (the API would refuse its token). */
const noChoices = () => Promise.resolve({ items: [], totalCount: 0, totalPages: 0 });

const bulkActions = [
  { value: "close", label: "Close", done: "closed" },
  { value: "reopen", label: "Reopen", done: "reopened" },
  { value: "escalate", label: "Escalate", done: "escalated" },
  { value: "assign", label: "Assign to…", done: "assigned" },
] as const;

/** Bulk close, reopen, escalate or assign the checked tickets: the API
 * changes all of them or none, and names the ids it refused. */
function BulkBar(props: { ids: number[]; me: Me | null; onDone: () => void }) {
  const [action, setAction] = useState<(typeof bulkActions)[number]["value"]>("close");
  const [rep, setRep] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [done, setDone] = useState<string | null>(null);
  if (props.ids.length === 0 && problem === null && done === null) return null;

  const apply = async () => {
    setBusy(true);
    setProblem(null);
    setDone(null);
    const repID = rep === "mine" ? props.me?.account.accountID : rep === "" ? undefined : Number(rep);
    const { error, response } = await api.POST("/api/Tickets/bulk-update", {
      body: { ticketIDs: props.ids, action, customerRepID: action === "assign" ? repID : undefined },
    });
    setBusy(false);
    if (response.ok) {
      const verb = bulkActions.find((a) => a.value === action)?.done ?? "changed";
      setDone(`${props.ids.length} ticket${props.ids.length === 1 ? "" : "s"} ${verb}.`);
      props.onDone();
    } else setProblem(asProblem(error, response));
  };

  return (
    <div class="bulk" role="group" aria-label="Bulk actions">
      <span>{props.ids.length} selected</span>
      <label for="bulk-action">Action</label>
      <select id="bulk-action" value={action} onChange={(e) => setAction(e.currentTarget.value as typeof action)}>
        {bulkActions.map((a) => (
          <option key={a.value} value={a.value}>
            {a.label}
          </option>
        ))}
      </select>
      {action === "assign" && (
        <>
          <label for="bulk-rep">Assignee</label>
          <Chooser
            id="bulk-rep"
            label="Assignee"
            value={rep}
            onChange={setRep}
            placeholder="Choose…"
            fixed={[{ value: "mine", label: "Me" }]}
            load={props.me?.account.role === "admin" ? accountChoices(props.me.account.accountID) : noChoices}
          />
        </>
      )}
      <button
        type="button"
        disabled={busy || props.ids.length === 0 || (action === "assign" && rep === "")}
        onClick={() => void apply()}
      >
        Apply
      </button>
      {done && (
        <span class="ok" role="status">
          {done}
        </span>
      )}
      {problem && (
        <p class="error" role="alert">
          {/* The API's detail may say it already. */}
          {/nothing was changed/i.test(problemText(problem)) ? problemText(problem) : `Nothing was changed: ${problemText(problem)}`}
          {problem.errors &&
            Object.entries(problem.errors).map(([field, msg]) => (
              <span key={field} class="field-error">
                <br />
                {field === "ticketIDs" ? "Tickets" : field}: {msg}
              </span>
            ))}
        </p>
      )}
    </div>
  );
}

export function Inbox(props: { query: URLSearchParams; me: Me | null }) {
  const { query, me } = props;
  const opts = useOptions(me);
  const [page, setPage] = useState<Schemas["TicketPage"] | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [loading, setLoading] = useState(false);
  const [selected, setSelected] = useState(0);
  const [reload, setReload] = useState(0);
  const [search, setSearch] = useState(query.get("q") ?? "");
  const [checked, setChecked] = useState<Set<number>>(new Set());
  const tableRef = useRef<HTMLTableSectionElement>(null);
  const searchRef = useRef<HTMLInputElement>(null);
  const key = query.toString();
  const needsMe = query.get("assignee") === "mine" && me === null;

  useEffect(() => {
    if (needsMe) return;
    let cancelled = false;
    setLoading(true);
    void api.GET("/api/Tickets", { params: { query: toListQuery(query, me) } }).then(({ data, error, response }) => {
      if (cancelled) return;
      setLoading(false);
      if (data) {
        setPage(data);
        setProblem(null);
      } else setProblem(asProblem(error, response));
    });
    return () => {
      cancelled = true;
    };
    // key stands for query; reload for a live event.
  }, [key, me, reload, needsMe]);

  // Live: any ticket or message event may change this page (a new ticket,
  // a status, a new message moving a ticket up); refetch it, coalescing a
  // burst of events.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = live.subscribe((e) => {
      if (e !== "reset" && !e.type.startsWith("ticket.") && !e.type.startsWith("message.")) return;
      clearTimeout(timer);
      timer = setTimeout(() => setReload((n) => n + 1), 100);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, []);

  const set = (changes: Record<string, string>, keepPage = false) => {
    const q = new URLSearchParams(query);
    for (const [k, v] of Object.entries(changes)) {
      if (v === "") q.delete(k);
      else q.set(k, v);
    }
    if (!keepPage) q.delete("page");
    const s = q.toString();
    navigate(s === "" ? "/" : "/?" + s, { replace: true });
    setSelected(0);
  };

  const items = page?.items ?? [];
  const pageNumber = num(query.get("page")) ?? 1;

  // j/k move the selection, Enter opens it, / goes to the search box. The
  // handler reads the selection from a ref: keys typed faster than a
  // render must act on the row the previous key selected.
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const itemsRef = useRef(items);
  itemsRef.current = items;
  const toggle = (id: number) =>
    setChecked((c) => {
      const n = new Set(c);
      if (!n.delete(id)) n.add(id);
      return n;
    });
  const toggleRef = useRef(toggle);
  toggleRef.current = toggle;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (e.altKey || e.ctrlKey || e.metaKey || t.closest("input, select, textarea, button")) return;
      const list = itemsRef.current;
      if (e.key === "j" || e.key === "k") {
        e.preventDefault();
        const n = Math.max(0, Math.min(list.length - 1, selectedRef.current + (e.key === "j" ? 1 : -1)));
        selectedRef.current = n;
        setSelected(n);
        tableRef.current?.querySelectorAll<HTMLElement>("tr")[n]?.focus();
      } else if (e.key === "Enter") {
        const row = list[selectedRef.current];
        if (!row || t.tagName === "A") return; // a focused link opens itself
        e.preventDefault();
        navigate(`/tickets/${row.ticketID}`);
      } else if (e.key === "x") {
        const row = list[selectedRef.current];
        if (!row) return;
        e.preventDefault();
        toggleRef.current(row.ticketID);
      } else if (e.key === "/") {
        e.preventDefault();
        searchRef.current?.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  const channelName = (id: number) => opts.channels.find((c) => c.channelID === id)?.name ?? `#${id}`;
  const accountName = (id: number | null) =>
    id === null ? "—" : id === me?.account.accountID ? "Me" : (opts.accounts.find((a) => a.accountID === id)?.name ?? `#${id}`);

  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Inbox</h1>
      <form
        class="search"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          set({ q: search.trim() });
        }}
      >
        <label for="f-q">Search tickets</label>
        <input
          id="f-q"
          ref={searchRef}
          type="search"
          value={search}
          maxLength={500}
          placeholder='Words, "a phrase", -exclude (press / to focus)'
          onInput={(e) => setSearch(e.currentTarget.value)}
          aria-invalid={problem?.errors?.q ? true : undefined}
          aria-describedby={problem?.errors?.q ? "f-q-error" : undefined}
        />
        <button type="submit">Search</button>
        {problem?.errors?.q && (
          <p id="f-q-error" class="field-error">
            {problem.errors.q}
          </p>
        )}
      </form>
      <fieldset class="filters">
        <legend>Filters</legend>
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" value={query.get("status") ?? ""} onChange={(e) => set({ status: e.currentTarget.value })}>
            <option value="">Any status</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-channel">Channel</label>
          <Chooser id="f-channel" label="Channel" value={query.get("channel") ?? ""} onChange={(v) => set({ channel: v })}
            placeholder="Any channel" load={channelChoices} />
        </div>
        <EndUserFilter value={query.get("endUser") ?? ""} onChange={(v) => set({ endUser: v })} />
        <div class="field">
          <label for="f-assignee">Assignee</label>
          <Chooser id="f-assignee" label="Assignee" value={query.get("assignee") ?? ""} onChange={(v) => set({ assignee: v })}
            placeholder="Anyone" fixed={[{ value: "mine", label: "Mine" }]}
            load={me?.account.role === "admin" ? accountChoices(me.account.accountID) : noChoices} reloadKey={me?.account.role} />
        </div>
        <div class="field">
          <label for="f-topic">Topic</label>
          <Chooser id="f-topic" label="Topic" value={query.get("topic") ?? ""} onChange={(v) => set({ topic: v })}
            placeholder="Any topic" load={topicChoices} search labelOf={topicLabel} />
        </div>
        <div class="field">
          <label for="f-from">Created from</label>
          <input
            id="f-from"
            type="date"
            value={query.get("from") ?? ""}
            onChange={(e) => set({ from: e.currentTarget.value })}
            aria-invalid={problem?.errors?.createdFrom ? true : undefined}
          />
          {problem?.errors?.createdFrom && <p class="field-error">{problem.errors.createdFrom}</p>}
        </div>
        <div class="field">
          <label for="f-to">Created to</label>
          <input
            id="f-to"
            type="date"
            value={query.get("to") ?? ""}
            onChange={(e) => set({ to: e.currentTarget.value })}
            aria-invalid={problem?.errors?.createdTo ? true : undefined}
          />
          {problem?.errors?.createdTo && <p class="field-error">{problem.errors.createdTo}</p>}
        </div>
        <div class="field">
          <label for="f-sort">Sort</label>
          <select id="f-sort" value={query.get("sort") ?? "-dateCreated"} onChange={(e) => set({ sort: e.currentTarget.value })}>
            {sorts.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
      </fieldset>

      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
      <p class="summary" aria-live="polite">
        {page === null
          ? loading
            ? "Loading tickets…"
            : ""
          : `${page.totalCount} ticket${page.totalCount === 1 ? "" : "s"}${loading ? " (updating…)" : ""}`}
      </p>
      <BulkBar
        ids={[...checked]}
        me={me}
        onDone={() => {
          setChecked(new Set());
          setReload((n) => n + 1);
        }}
      />
      <table class="tickets" aria-describedby="inbox-keys">
        <thead>
          <tr>
            <th scope="col">
              <input
                type="checkbox"
                aria-label="Select every ticket of this page"
                checked={items.length > 0 && items.every((t) => checked.has(t.ticketID))}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  setChecked((c) => {
                    const n = new Set(c);
                    items.forEach((t) => (on ? n.add(t.ticketID) : n.delete(t.ticketID)));
                    return n;
                  });
                }}
              />
            </th>
            <th scope="col">Id</th>
            <th scope="col">Subject</th>
            <th scope="col">Status</th>
            <th scope="col">Channel</th>
            <th scope="col">Assignee</th>
            <th scope="col">Topics</th>
            <th scope="col">Created</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody ref={tableRef}>
          {items.map((t: Ticket, i) => (
            <tr
              key={t.ticketID}
              data-ticket-id={t.ticketID}
              tabIndex={i === selected ? 0 : -1}
              class={i === selected ? "selected" : undefined}
              aria-selected={i === selected}
              onFocus={() => {
                selectedRef.current = i;
                setSelected(i);
              }}
            >
              <td>
                <input
                  type="checkbox"
                  aria-label={`Select ticket ${t.ticketID}`}
                  checked={checked.has(t.ticketID)}
                  onChange={() => toggle(t.ticketID)}
                />
              </td>
              <td>{t.ticketID}</td>
              <td>
                <a href={`/tickets/${t.ticketID}`} onClick={linkTo(`/tickets/${t.ticketID}`)}>
                  {t.subject}
                </a>
              </td>
              <td>
                <span class={`status status-${t.status.toLowerCase()}`}>{t.status}</span>
              </td>
              <td>{channelName(t.channelID)}</td>
              <td>{accountName(t.customerRepID)}</td>
              <td>{t.topics.join(", ")}</td>
              <td>{fmtDate(t.dateCreated)}</td>
              <td>{fmtDate(t.dateUpdated)}</td>
            </tr>
          ))}
          {page === null && problem === null && (
            // Keeps the first page's place while it loads: nothing below moves.
            <tr class="loading" aria-hidden="true">
              <td colSpan={9} />
            </tr>
          )}
          {page !== null && items.length === 0 && (
            <tr>
              <td colSpan={9} class="empty">
                No tickets match.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <p id="inbox-keys" class="hint">
        Keys: j and k move, x selects, Enter opens, / searches.
      </p>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={pageNumber <= 1} onClick={() => set({ page: String(pageNumber - 1) }, true)}>
          Previous
        </button>
        <span>
          Page {pageNumber} of {Math.max(page?.totalPages ?? 1, 1)}
        </span>
        <button
          type="button"
          disabled={page === null || pageNumber >= page.totalPages}
          onClick={() => set({ page: String(pageNumber + 1) }, true)}
        >
          Next
        </button>
        <label for="f-pagesize">Per page</label>
        <select id="f-pagesize" value={query.get("pageSize") ?? "20"} onChange={(e) => set({ pageSize: e.currentTarget.value })}>
          {pageSizes.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </nav>
    </section>
  );
}
