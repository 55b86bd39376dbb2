// One line of status for the whole console (retries, live connection),
// shown in a polite live region.
type Listener = (text: string | null) => void;

let current: string | null = null;
const listeners = new Set<Listener>();

export const notice = {
  get: () => current,
  set(text: string | null) {
    current = text;
    listeners.forEach((l) => l(text));
  },
  subscribe(l: Listener): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  },
};
