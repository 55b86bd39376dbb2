import { useEffect, useState } from "preact/hooks";
import { api, asProblem, problemText, type Problem, type Schemas, type TicketMessage } from "../api/client";

type Topic = Schemas["Topic"];

/** The customer's topics, fetched once per page load (pages of 100). */
let topicsOnce: Promise<Topic[]> | null = null;
function allTopics(): Promise<Topic[]> {
  topicsOnce ??= (async () => {
    const out: Topic[] = [];
    for (let pageNumber = 1; ; pageNumber++) {
      const { data } = await api.GET("/api/Topics", { params: { query: { pageNumber, pageSize: 100, sort: "name" } } });
      if (!data) {
        topicsOnce = null;
        return out;
      }
      out.push(...data.items);
      if (pageNumber >= data.totalPages) return out;
    }
  })();
  return topicsOnce;
}

function ErrorLine(props: { problem: Problem | null; field?: string }) {
  const p = props.problem;
  if (!p) return null;
  const text = (props.field && p.errors?.[props.field]) || problemText(p);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** A message's topics with where they came from (set by an agent or
 * detected by the assistant); assign replaces them, detect asks the
 * assistant (its answer arrives later as a live event). */
export function MessageTopics(props: { m: TicketMessage; onChange: () => void }) {
  const { m } = props;
  const [editing, setEditing] = useState(false);
  const [topics, setTopics] = useState<Topic[]>([]);
  const [chosen, setChosen] = useState<Set<number>>(new Set());
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState("");
  const [problem, setProblem] = useState<Problem | null>(null);
  const mid = m.messageID;

  const edit = () => {
    setChosen(new Set(m.topics.map((t) => t.topicID)));
    setEditing(true);
    void allTopics().then(setTopics);
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    const { error, response } = await api.PUT("/api/TicketMessages/{id}/topics", {
      params: { path: { id: mid } },
      body: { topicIds: [...chosen] },
    });
    setBusy(false);
    if (response.ok) {
      setEditing(false);
      props.onChange();
    } else setProblem(asProblem(error, response));
  };
  const detect = async () => {
    setBusy(true);
    setProblem(null);
    setNote("");
    const { error, response } = await api.POST("/api/TicketMessages/{id}/detect-topics", { params: { path: { id: mid } } });
    setBusy(false);
    if (response.ok) setNote("Detection requested: the topics appear here when the assistant has found them.");
    else setProblem(asProblem(error, response));
  };

  const source = m.topicsSource === "auto" ? "detected by the assistant" : m.topicsSource === "manual" ? "set by an agent" : "";
  return (
    <div class="topics" data-topics-source={m.topicsSource ?? ""}>
      <p>
        <strong>Topics:</strong>{" "}
        {m.topics.length === 0 ? "none" : m.topics.map((t) => t.topicName).join(", ")}
        {source && <span class="hint"> ({source})</span>}{" "}
        {!editing && (
          <>
            <button type="button" class="secondary small" onClick={edit}>
              Assign topics…
            </button>{" "}
            <button type="button" class="secondary small" disabled={busy} onClick={() => void detect()}>
              Detect topics
            </button>
          </>
        )}
      </p>
      {note && <p class="hint" aria-live="polite">{note}</p>}
      {editing && (
        <form onSubmit={(e) => void save(e)}>
          <fieldset>
            <legend>Topics of message {mid}</legend>
            {topics.length === 0 && <p class="hint">No topics defined (an admin adds them).</p>}
            {topics.map((t) => (
              <label key={t.topicID} class="check">
                <input
                  type="checkbox"
                  checked={chosen.has(t.topicID)}
                  onChange={(e) => {
                    // From the latest set: two changes before a render
                    // must both count.
                    const on = e.currentTarget.checked;
                    setChosen((c) => {
                      const n = new Set(c);
                      if (on) n.add(t.topicID);
                      else n.delete(t.topicID);
                      return n;
                    });
                  }}
                />{" "}
                {t.name}
              </label>
            ))}
          </fieldset>
          <div class="actions">
            <button type="submit" disabled={busy}>
              Save topics
            </button>
            <button type="button" class="secondary" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <ErrorLine problem={problem} field="topicIds" />
    </div>
  );
}

/** The knowledge-base documents the reply is (or would be) grounded in,
 * with where the list comes from and which engine ranked it. */
export function PromptDocuments(props: { m: TicketMessage }) {
  const [docs, setDocs] = useState<Schemas["TicketMessagePromptDocuments"] | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [open, setOpen] = useState(false);
  const mid = props.m.messageID;
  // Reloaded when the message changes (new topics, a prepared reply).
  useEffect(() => {
    if (!open) return;
    void api.GET("/api/TicketMessages/{id}/prompt-documents", { params: { path: { id: mid } } }).then(({ data, error, response }) => {
      if (data) {
        setDocs(data);
        setProblem(null);
      } else setProblem(asProblem(error, response));
    });
  }, [open, mid, props.m.dateUpdated]);
  return (
    <details class="prompt-docs" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Knowledge-base documents</summary>
      {docs && (
        <>
          <p class="hint" data-docs-source={docs.source}>
            {docs.source === "reply" ? "Stored with the prepared reply" : "Current ranking"}
            {docs.engine ? `, ranked by ${docs.engine}${docs.model ? ` (${docs.model})` : ""}` : ""}.
          </p>
          {docs.promptDocuments.length === 0 ? (
            <p class="hint">None: the message has no topics with documents.</p>
          ) : (
            <ol>
              {docs.promptDocuments.map((d) => (
                <li key={d.documentID}>
                  <strong>{d.title}</strong> <span class="hint">score {d.score.toFixed(2)}</span>
                  <div class="text">{d.content}</div>
                </li>
              ))}
            </ol>
          )}
        </>
      )}
      <ErrorLine problem={problem} />
    </details>
  );
}

const langKey = "console.lang";

/** The agent's language: chosen here, else the browser's. */
export function agentLanguage(): string {
  return localStorage.getItem(langKey) ?? (navigator.language || "en").split("-")[0] ?? "en";
}

/** Translates a message's text into the agent's language (changeable). */
export function Translate(props: { text: string; mid: number }) {
  const [lang, setLang] = useState(agentLanguage);
  const [out, setOut] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const id = `lang-${props.mid}`;
  const run = async (e: Event) => {
    e.preventDefault();
    const target = lang.trim().toLowerCase();
    localStorage.setItem(langKey, target);
    setBusy(true);
    setProblem(null);
    const { data, error, response } = await api.POST("/api/Translations/translate", { body: { sourceText: props.text, targetLang: target } });
    setBusy(false);
    if (data !== undefined) setOut(data);
    else setProblem(asProblem(error, response));
  };
  return (
    <form class="translate" onSubmit={(e) => void run(e)}>
      <button type="submit" class="secondary small" disabled={busy || props.text.trim() === ""}>
        Translate
      </button>{" "}
      <label for={id}>into</label>{" "}
      <input id={id} class="lang" size={4} maxLength={3} value={lang} onInput={(e) => setLang(e.currentTarget.value)} />
      {busy && <span class="hint"> Translating…</span>}
      {out !== null && (
        <div class="text translation" lang={lang} data-translation>
          {out}
        </div>
      )}
      <ErrorLine problem={problem} field="targetLang" />
    </form>
  );
}
