import { useEffect, useState } from "preact/hooks";
import { api, apiFetch, asProblem, problemText, type Problem, type Schemas, type Ticket, type TicketMessage } from "../api/client";
import type { Me } from "../App";
import { live } from "../live";
import { session } from "../session";
import { linkTo, navigate } from "../router";
import { Chooser } from "../components/Chooser";
import { accountChoices } from "../components/choices";
import { MessageTopics, PromptDocuments, Translate } from "../components/MessageTools";

/** An agent assigns to themselves or to nobody only. */
const noAccounts = () => Promise.resolve({ items: [], totalCount: 0, totalPages: 0 });

type Status = Ticket["status"];

// The moves a request may make (services/tickets/README.md, "States").
const moves: Record<Status, Status[]> = {
  Open: ["Pending", "Escalated", "Resolved", "Closed"],
  Pending: ["Open", "Escalated", "Resolved", "Closed"],
  Escalated: ["Open", "Pending", "Resolved", "Closed"],
  Resolved: ["Open", "Escalated", "Closed"],
  Closed: ["Open"],
};

function fmtDate(s: string): string {
  return new Date(s).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** Every message of the ticket, oldest first (pages of 100). */
async function loadMessages(ticketId: number): Promise<{ items: TicketMessage[] } | { problem: Problem }> {
  const items: TicketMessage[] = [];
  for (let pageNumber = 1; ; pageNumber++) {
    const { data, error, response } = await api.GET("/api/TicketMessages", {
      params: { query: { ticketId, pageNumber, pageSize: 100 } },
    });
    if (!data) return { problem: asProblem(error, response) };
    items.push(...data.items);
    if (pageNumber >= data.totalPages) return { items };
  }
}

/** A plain text split into its new part and the quoted history (lines from
 * the first "> " or "On ... wrote:" on). */
function splitQuoted(text: string): [string, string] {
  const lines = text.split("\n");
  const i = lines.findIndex((l, n) => /^\s*>/.test(l) || (/^On .+ wrote:\s*$/.test(l) && lines[n + 1]?.startsWith(">")));
  if (i <= 0) return [text, ""];
  return [lines.slice(0, i).join("\n").trimEnd(), lines.slice(i).join("\n")];
}

function Delivery(props: { m: TicketMessage }) {
  const d = props.m.delivery;
  if (!d) return null;
  const label = { pending: "Delivery pending", sent: "Delivered", failed: "Delivery failed" }[d.status];
  return (
    <p class={`delivery delivery-${d.status}`} data-delivery={d.status}>
      {label}
      {d.attempts > 1 ? ` after ${d.attempts} attempts` : ""}
      {d.status === "failed" && d.error ? `: ${d.error}` : ""}
    </p>
  );
}

function MessageBody(props: { m: TicketMessage }) {
  const { m } = props;
  const [text, quoted] = splitQuoted(m.message);
  return (
    <>
      <div class="text">{text}</div>
      {quoted !== "" && (
        <details class="quoted">
          <summary>Quoted history</summary>
          <div class="text">{quoted}</div>
        </details>
      )}
      {m.mail && m.mail.html !== "" && (
        <details class="mail-html">
          <summary>Original mail{m.mail.truncated ? " (cut to its size limit)" : ""}, with quoted history</summary>
          {/* Sanitised by the API, and sandboxed here: no scripts, no same
              origin, no forms; the console's CSP also applies to it. */}
          <iframe title={`Mail of message ${m.messageID}`} sandbox="" srcdoc={m.mail.html} referrerpolicy="no-referrer" />
        </details>
      )}
    </>
  );
}

function PreparedReply(props: { m: TicketMessage; closed: boolean; onSent: () => void }) {
  const { m } = props;
  const prepared = m.aiReply.text ?? "";
  const [text, setText] = useState(prepared);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  useEffect(() => setText(prepared), [prepared]);
  const modified = text.trim() !== prepared.trim();

  const send = async (asIs: boolean) => {
    setBusy(true);
    setProblem(null);
    const { data, error, response } = await api.POST("/api/TicketMessages/{id}/send-reply", {
      params: { path: { id: m.messageID } },
      body: asIs ? {} : { modifiedAnswer: text },
    });
    setBusy(false);
    if (!data) setProblem(asProblem(error, response));
    else props.onSent();
  };

  const id = `reply-${m.messageID}`;
  return (
    <form class="reply" onSubmit={(e) => e.preventDefault()} aria-labelledby={`${id}-label`}>
      <label id={`${id}-label`} for={id}>
        Prepared reply{m.aiReply.engine ? ` (${m.aiReply.engine}${m.aiReply.model ? `, ${m.aiReply.model}` : ""})` : ""}
      </label>
      <textarea
        id={id}
        rows={6}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !busy && !props.closed) void send(!modified);
          else if (e.key === "Escape") e.currentTarget.blur();
        }}
        aria-invalid={problem?.errors?.modifiedAnswer ? true : undefined}
        aria-describedby={`${id}-hint`}
      />
      <p id={`${id}-hint`} class="hint">
        Ctrl+Enter sends (as is when unchanged, else modified); Esc leaves the reply.
      </p>
      {problem?.errors?.modifiedAnswer && <p class="field-error">{problem.errors.modifiedAnswer}</p>}
      <div class="actions">
        <button type="button" disabled={busy || props.closed || modified} onClick={() => void send(true)}>
          Send as is
        </button>
        <button type="button" disabled={busy || props.closed || !modified || text.trim() === ""} onClick={() => void send(false)}>
          Send modified
        </button>
        {modified && (
          <button type="button" class="secondary" disabled={busy} onClick={() => setText(prepared)}>
            Undo changes
          </button>
        )}
      </div>
      {props.closed && <p class="hint">The ticket is closed: reopen it to send.</p>}
      {problem && !problem.errors && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
    </form>
  );
}

/** The ticket's summary, asked for on demand (it may take an LLM call). */
function Summary(props: { id: number }) {
  const [text, setText] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const load = async () => {
    setBusy(true);
    setProblem(null);
    const { data, error, response } = await api.GET("/api/Tickets/{id}/summary", { params: { path: { id: props.id } } });
    setBusy(false);
    if (data !== undefined) setText(data);
    else setProblem(asProblem(error, response));
  };
  return (
    <div class="summary-box">
      <button type="button" class="secondary" disabled={busy} onClick={() => void load()}>
        {text === null ? "Summarise the ticket" : "Summarise again"}
      </button>
      {busy && <span class="hint"> Summarising…</span>}
      {text !== null && <p class="summary-text">{text}</p>}
      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
    </div>
  );
}

/** Escalating a message: a comment for whoever takes it over. */
function Escalate(props: { m: TicketMessage; me: Me | null; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [comment, setComment] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const id = `escalate-${props.m.messageID}`;
  if (!open) {
    return (
      <button type="button" class="secondary" onClick={() => setOpen(true)}>
        Escalate…
      </button>
    );
  }
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    const { data, error, response } = await api.POST("/api/TicketMessages/{id}/escalate", {
      params: { path: { id: props.m.messageID } },
      body: { feedbackComment: comment, email: props.me?.account.email ?? "" },
    });
    setBusy(false);
    if (data) {
      setOpen(false);
      setComment("");
      props.onDone();
    } else setProblem(asProblem(error, response));
  };
  return (
    <form class="escalate" onSubmit={(e) => void submit(e)}>
      <label for={id}>Why escalate?</label>
      <textarea
        id={id}
        rows={3}
        maxLength={2000}
        value={comment}
        onInput={(e) => setComment(e.currentTarget.value)}
        aria-invalid={problem?.errors?.feedbackComment ? true : undefined}
      />
      {problem?.errors?.feedbackComment && <p class="field-error">{problem.errors.feedbackComment}</p>}
      {problem && !problem.errors?.feedbackComment && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy || comment.trim() === ""}>
          Escalate
        </button>
        <button type="button" class="secondary" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function fmtSize(n: number): string {
  return n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} kB` : `${(n / (1 << 20)).toFixed(1)} MB`;
}

/** A message's attachments: listed, downloaded with the token (a blob the
 * browser saves; the file is never shown inline), deleted. */
function Attachments(props: { m: TicketMessage; onChange: () => void }) {
  const [items, setItems] = useState<Schemas["TicketMessageAttachment"][] | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const mid = props.m.messageID;
  useEffect(() => {
    if (props.m.attachments === 0) {
      setItems([]);
      return;
    }
    void api.GET("/api/TicketMessages/{id}/attachments", { params: { path: { id: mid } } }).then(({ data, error, response }) => {
      if (data) setItems(data);
      else setProblem(asProblem(error, response));
    });
  }, [mid, props.m.attachments]);

  const download = async (a: Schemas["TicketMessageAttachment"]) => {
    setProblem(null);
    const resp = await apiFetch(new Request(`/api/TicketMessages/${mid}/attachments/${a.ticketMessageAttachmentID}`));
    if (!resp.ok) {
      setProblem(asProblem(await resp.json().catch(() => null), resp));
      return;
    }
    const url = URL.createObjectURL(await resp.blob());
    const link = document.createElement("a");
    link.href = url;
    link.download = a.fileName;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  const remove = async (a: Schemas["TicketMessageAttachment"]) => {
    if (!confirm(`Delete ${a.fileName}?`)) return;
    const { error, response } = await api.DELETE("/api/TicketMessages/{id}/attachments/{attachmentId}", {
      params: { path: { id: mid, attachmentId: a.ticketMessageAttachmentID } },
    });
    if (response.ok) props.onChange();
    else setProblem(asProblem(error, response));
  };

  // Upload with progress: fetch cannot report it, XMLHttpRequest can.
  const [progress, setProgress] = useState<number | null>(null);
  const upload = (file: File) => {
    setProblem(null);
    const form = new FormData();
    form.append("file", file);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/api/TicketMessages/${mid}/attachments`);
    const token = session.token();
    if (token !== null) xhr.setRequestHeader("Authorization", "Bearer " + token);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) setProgress(e.loaded / e.total);
    };
    xhr.onloadend = () => {
      setProgress(null);
      if (xhr.status === 201) {
        props.onChange();
        return;
      }
      if (xhr.status === 401) session.end("Your session has expired or was ended. Please sign in again.");
      let body: unknown = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // not a problem body
      }
      setProblem(asProblem(body, new Response(null, { status: xhr.status === 0 ? 599 : xhr.status, statusText: xhr.status === 0 ? "Upload failed" : xhr.statusText })));
    };
    xhr.send(form);
  };

  const inputId = `attach-${mid}`;
  return (
    <div class="attachments">
      <label for={inputId} class="attach">
        Attach a file
      </label>
      <input
        id={inputId}
        type="file"
        disabled={progress !== null}
        onChange={(e) => {
          const f = e.currentTarget.files?.[0];
          if (f) upload(f);
          e.currentTarget.value = "";
        }}
      />
      {progress !== null && (
        <progress max={1} value={progress} aria-label={`Uploading to message ${mid}`}>
          {Math.round(progress * 100)}%
        </progress>
      )}
      {items === null || items.length === 0 ? null : (
      <ul aria-label={`Attachments of message ${mid}`}>
        {items.map((a) => (
          <li key={a.ticketMessageAttachmentID}>
            <button type="button" class="link" onClick={() => void download(a)}>
              {a.fileName}
            </button>{" "}
            <span class="hint">
              {a.contentType.split(";")[0]}, {fmtSize(a.size)}
            </span>{" "}
            <button type="button" class="secondary small" aria-label={`Delete ${a.fileName}`} onClick={() => void remove(a)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      )}
      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
    </div>
  );
}

export function TicketView(props: { id: number; me: Me | null }) {
  const { id } = props;
  const [ticket, setTicket] = useState<Ticket | null>(null);
  const [messages, setMessages] = useState<TicketMessage[]>([]);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [statusProblem, setStatusProblem] = useState<Problem | null>(null);
  const [reload, setReload] = useState(0);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let cancelled = false;
    void Promise.all([api.GET("/api/Tickets/{id}", { params: { path: { id } } }), loadMessages(id)]).then(([t, ms]) => {
      if (cancelled) return;
      if (!t.data) {
        setProblem(asProblem(t.error, t.response));
        return;
      }
      setTicket(t.data);
      if ("problem" in ms) setProblem(ms.problem);
      else {
        setMessages(ms.items);
        setProblem(null);
      }
    });
    return () => {
      cancelled = true;
    };
  }, [id, reload]);

  // Live: an event about this ticket (a message, a status, a prepared
  // reply, a delivery) refreshes the thread.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = live.subscribe((e) => {
      if (e !== "reset" && e.ticketID !== id) return;
      clearTimeout(timer);
      timer = setTimeout(() => setReload((n) => n + 1), 100);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [id]);

  useEffect(() => {
    document.getElementById("ticket-title")?.focus();
  }, [id]);

  // r goes to the prepared reply (or the last message's escalation when
  // none), u back to the inbox; Ctrl+Enter in the reply sends it.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (e.altKey || e.ctrlKey || e.metaKey || t.closest("input, select, textarea, button, summary")) return;
      if (e.key === "r") {
        const reply = document.querySelector<HTMLTextAreaElement>("form.reply textarea");
        if (!reply) return;
        e.preventDefault();
        reply.focus();
      } else if (e.key === "u") {
        e.preventDefault();
        navigate("/");
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  const [accounts, setAccounts] = useState<Schemas["Account"][]>([]);
  const admin = props.me?.account.role === "admin";
  useEffect(() => {
    // Admins only; an agent assigns to themselves or to nobody.
    if (!admin) return;
    void api.GET("/api/Accounts", { params: { query: { pageSize: 100 } } }).then(({ data }) => {
      setAccounts((data?.items ?? []).filter((a) => a.role !== "integration"));
    });
  }, [admin]);
  const [assignProblem, setAssignProblem] = useState<Problem | null>(null);
  const assign = async (v: string) => {
    setBusy(true);
    setAssignProblem(null);
    const customerRepID = v === "none" ? null : v === "me" ? (props.me?.account.accountID ?? null) : Number(v);
    const { data, error, response } = await api.PUT("/api/Tickets/{id}", { params: { path: { id } }, body: { customerRepID } });
    setBusy(false);
    if (response.ok) {
      if (data) setTicket(data);
      setReload((n) => n + 1);
    } else setAssignProblem(asProblem(error, response));
  };

  const changeStatus = async (status: string) => {
    setBusy(true);
    setStatusProblem(null);
    const { data, error, response } = await api.PUT("/api/Tickets/{id}", { params: { path: { id } }, body: { status } });
    setBusy(false);
    if (response.ok) {
      if (data) setTicket(data);
      setReload((n) => n + 1);
    } else setStatusProblem(asProblem(error, response));
  };

  if (problem && !ticket) {
    return (
      <section>
        <h1 id="ticket-title" tabIndex={-1}>
          Ticket {id}
        </h1>
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
        <p>
          <a href="/" onClick={linkTo("/")}>
            Back to the inbox
          </a>
        </p>
      </section>
    );
  }
  if (!ticket) return <p aria-live="polite">Loading ticket {id}…</p>;

  // The reply to prepare is the latest end-user message's.
  const replyTo = [...messages].reverse().find((m) => m.senderType === "EndUser");
  return (
    <section aria-labelledby="ticket-title" class="ticket">
      <p>
        <a href="/" onClick={linkTo("/")}>
          ← Inbox
        </a>
      </p>
      <h1 id="ticket-title" tabIndex={-1}>
        #{ticket.ticketID} {ticket.subject}
      </h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <span class={`status status-${ticket.status.toLowerCase()}`} data-status={ticket.status}>
            {ticket.status}
          </span>
        </dd>
        <dt>Created</dt>
        <dd>{fmtDate(ticket.dateCreated)}</dd>
        <dt>Topics</dt>
        <dd>{ticket.topics.length > 0 ? ticket.topics.join(", ") : "None"}</dd>
        <dt>Assignee</dt>
        <dd>
          {ticket.customerRepID === null
            ? "Nobody"
            : ticket.customerRepID === props.me?.account.accountID
              ? "Me"
              : (accounts.find((a) => a.accountID === ticket.customerRepID)?.name ?? `#${ticket.customerRepID}`)}
        </dd>
      </dl>
      <div class="status-change">
        <label for="assign">Assign to</label>
        <Chooser
          id="assign"
          label="Assign to"
          value=""
          disabled={busy}
          onChange={(v) => {
            if (v !== "") void assign(v);
          }}
          invalid={!!assignProblem}
          describedBy={assignProblem ? "assign-error" : undefined}
          placeholder="Choose…"
          fixed={[
            { value: "me", label: "Me" },
            { value: "none", label: "Nobody" },
          ]}
          load={admin ? accountChoices(props.me?.account.accountID) : noAccounts}
          reloadKey={admin}
        />
        {assignProblem && (
          <p id="assign-error" class="field-error" role="alert">
            {assignProblem.errors?.customerRepID ?? problemText(assignProblem)}
          </p>
        )}
      </div>
      <div class="status-change">
        <label for="status-move">Change status</label>
        <select
          id="status-move"
          value=""
          disabled={busy}
          onChange={(e) => {
            const v = e.currentTarget.value;
            if (v !== "") void changeStatus(v);
          }}
          aria-invalid={statusProblem ? true : undefined}
          aria-describedby={statusProblem ? "status-error" : undefined}
        >
          <option value="">Move to…</option>
          {moves[ticket.status].map((s) => (
            <option key={s} value={s}>
              {s === "Open" && ticket.status === "Closed" ? "Open (reopen)" : s}
            </option>
          ))}
        </select>
        {statusProblem && (
          <p id="status-error" class="field-error" role="alert">
            {statusProblem.errors?.status ?? problemText(statusProblem)}
          </p>
        )}
      </div>
      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}

      <h2>Summary</h2>
      <Summary id={id} />

      <h2>Thread</h2>
      <p id="thread-keys" class="hint">
        Keys: r goes to the prepared reply, Ctrl+Enter sends it, Esc leaves it, u goes back to the inbox.
      </p>
      <ol class="thread">
        {messages.map((m) => (
          <li key={m.messageID} class={`message sender-${m.senderType.toLowerCase()}`} data-message-id={m.messageID}>
            <article aria-label={`${m.senderType} message ${m.messageID}`}>
              <header>
                <strong>
                  {m.senderType === "EndUser"
                    ? m.mail?.from.name || m.mail?.from.address || "End user"
                    : m.senderType === "Agent"
                      ? "Agent"
                      : m.senderType}
                </strong>{" "}
                <time dateTime={m.dateCreated}>{fmtDate(m.dateCreated)}</time>
                {m.isEscalated && <span class="tag">Escalated</span>}
                {m.attachments > 0 && <span class="tag">{m.attachments} attachment{m.attachments === 1 ? "" : "s"}</span>}
                {m.topics.map((t) => (
                  <span class="tag" key={t.ticketMessageTopicID}>
                    {t.topicName}
                  </span>
                ))}
              </header>
              <MessageBody m={m} />
              <Translate text={m.message} mid={m.messageID} />
              {m.senderType === "EndUser" && <MessageTopics m={m} onChange={() => setReload((n) => n + 1)} />}
              {m.senderType === "EndUser" && <PromptDocuments m={m} />}
              <Attachments m={m} onChange={() => setReload((n) => n + 1)} />
              <Delivery m={m} />
              {m.senderType === "EndUser" && m.aiReply.status === "pending" && (
                <p class="hint">The assistant is preparing a reply…</p>
              )}
              {/* modified: sent with the agent's changes (send-reply). */}
              {m === replyTo && m.aiReply.status === "prepared" && (
                <PreparedReply m={m} closed={ticket.isClosed} onSent={() => setReload((n) => n + 1)} />
              )}
              {m.senderType === "EndUser" && m.aiReply.status === "sent" && <p class="hint">Reply sent.</p>}
              {m.senderType === "EndUser" && m.aiReply.status === "modified" && <p class="hint">Reply sent with changes.</p>}
              {m.senderType === "EndUser" && <Escalate m={m} me={props.me} onDone={() => setReload((n) => n + 1)} />}
            </article>
          </li>
        ))}
      </ol>
    </section>
  );
}
