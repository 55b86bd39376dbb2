// Live updates from the live service (/api/live): a single-use stream
// ticket (POST /api/live/tickets with the bearer token, because an
// EventSource cannot send a header), then an EventSource on
// /api/live/events. A used ticket cannot reconnect, so on an error the
// console closes the source itself and opens a new one with a new ticket
// and lastEventId: no event is missed across a reconnect.
import { apiFetch } from "./api/client";
import { notice } from "./notice";
import { session } from "./session";

/** An event as the live service sends it: ids and states, no texts. */
export interface LiveEvent {
  type: string;
  ticketID?: number;
  messageID?: number;
  [k: string]: unknown;
}

type Listener = (e: LiveEvent | "reset") => void;
type StateListener = (open: boolean) => void;

/** The event types the live service forwards (ticket.>, message.>, end-user.>). */
export const eventTypes = [
  "ticket.created",
  "ticket.updated",
  "ticket.deleted",
  "ticket.message.created",
  "ticket.message.updated",
  "ticket.message.deleted",
  "ticket.message.topics-assigned",
  "ticket.message.topic-detection.requested",
  "message.reply.sent",
  "message.reply.delivered",
  "message.reply.failed",
  "message.escalated",
  "message.voted",
  "end-user.created",
  "end-user.updated",
  "end-user.deleted",
];

const listeners = new Set<Listener>();
const stateListeners = new Set<StateListener>();
let isOpen = false;

function setOpen(open: boolean) {
  if (open === isOpen) return;
  isOpen = open;
  stateListeners.forEach((l) => l(open));
}
let source: EventSource | null = null;
let lastEventId = "";
let retry = 0;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let running = false;

function emit(e: LiveEvent | "reset") {
  listeners.forEach((l) => l(e));
}

async function open() {
  if (!running || !session.active()) return;
  let ticket: string;
  try {
    const resp = await apiFetch(new Request("/api/live/tickets", { method: "POST" }));
    if (!resp.ok) throw new Error(`stream ticket: HTTP ${resp.status}`);
    ticket = ((await resp.json()) as { ticket: string }).ticket;
  } catch {
    scheduleReconnect();
    return;
  }
  if (!running) return;
  const q = new URLSearchParams({ ticket });
  if (lastEventId !== "") q.set("lastEventId", lastEventId);
  const es = new EventSource("/api/live/events?" + q.toString());
  source = es;
  es.onopen = () => {
    setOpen(true);
    if (retry > 0) notice.set(null);
    retry = 0;
  };
  es.onerror = () => {
    // Never let the EventSource retry with the used ticket.
    es.close();
    setOpen(false);
    if (source === es) {
      source = null;
      scheduleReconnect();
    }
  };
  const onEvent = (ev: MessageEvent<string>) => {
    if (ev.lastEventId !== "") lastEventId = ev.lastEventId;
    try {
      emit(JSON.parse(ev.data) as LiveEvent);
    } catch {
      emit({ type: ev.type });
    }
  };
  for (const t of eventTypes) es.addEventListener(t, onEvent);
  es.addEventListener("reset", () => emit("reset"));
  es.addEventListener("expired", () => {
    es.close();
    setOpen(false);
    source = null;
    session.end("Your session has expired. Please sign in again.");
  });
}

function scheduleReconnect() {
  if (!running) return;
  retry++;
  const wait = Math.min(1000 * 2 ** Math.min(retry - 1, 4), 15_000);
  if (retry > 1) notice.set(`Live updates interrupted; reconnecting in ${Math.ceil(wait / 1000)} s.`);
  clearTimeout(retryTimer);
  retryTimer = setTimeout(() => void open(), wait);
}

export const live = {
  start() {
    if (running) return;
    running = true;
    retry = 0;
    void open();
  },
  stop() {
    running = false;
    clearTimeout(retryTimer);
    source?.close();
    source = null;
    lastEventId = "";
    setOpen(false);
  },
  subscribe(l: Listener): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  },
  /** Whether a stream is open (the header's indicator). */
  connected: () => isOpen,
  onState(l: StateListener): () => void {
    stateListeners.add(l);
    return () => stateListeners.delete(l);
  },
};
