// The session: the access token in memory and in sessionStorage (this tab
// only, gone when it closes; never a cookie), ended at its expiry or on a
// 401 with a message for the sign-in page.
export interface Session {
  token: string;
  expiresAt: string;
}

const key = "sp.console.session";
type Listener = () => void;

let current: Session | null = load();
let endMessage: string | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<Listener>();

function load(): Session | null {
  try {
    const raw = sessionStorage.getItem(key);
    if (raw === null) return null;
    const s = JSON.parse(raw) as Session;
    return Date.parse(s.expiresAt) > Date.now() ? s : null;
  } catch {
    return null;
  }
}

function schedule() {
  clearTimeout(timer);
  if (current === null) return;
  const ms = Date.parse(current.expiresAt) - Date.now();
  // setTimeout takes at most 2^31-1 ms; a longer token is checked again.
  timer = setTimeout(() => {
    if (current !== null && Date.parse(current.expiresAt) <= Date.now()) {
      session.end("Your session has expired. Please sign in again.");
    } else schedule();
  }, Math.min(Math.max(ms, 0), 2 ** 31 - 1));
}

export const session = {
  token: (): string | null => current?.token ?? null,
  active: (): boolean => current !== null,
  start(s: Session) {
    current = s;
    endMessage = null;
    sessionStorage.setItem(key, JSON.stringify(s));
    schedule();
    listeners.forEach((l) => l());
  },
  end(message: string | null) {
    if (current === null) return;
    current = null;
    endMessage = message;
    sessionStorage.removeItem(key);
    clearTimeout(timer);
    listeners.forEach((l) => l());
  },
  /** The reason the last session ended, once. */
  takeEndMessage(): string | null {
    const m = endMessage;
    endMessage = null;
    return m;
  },
  subscribe(l: Listener): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  },
};

schedule();
