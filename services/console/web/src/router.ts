// A small history router: the console's pages are /, /tickets/<id>,
// the admin pages /admin/accounts, /admin/channels (also at
// /admin/connections, where the Microsoft 365 connect flow ends with its
// outcome in the query) and /admin/topics,
// /signin, /forgot-password and /reset-password (the page of the mailed
// reset link, AUTH_RESET_URL); the console binary answers index.html for
// each.
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "inbox"; query: URLSearchParams }
  | { page: "ticket"; id: number }
  | { page: "signin" }
  | { page: "accounts" }
  | { page: "channels"; query?: URLSearchParams }
  | { page: "topics" }
  | { page: "forgot-password" }
  | { page: "reset-password" }
  | { page: "notfound" };

export function parse(loc: Location): Route {
  const path = loc.pathname.replace(/\/+$/, "") || "/";
  if (path === "/") return { page: "inbox", query: new URLSearchParams(loc.search) };
  if (path === "/signin") return { page: "signin" };
  if (path === "/admin/accounts") return { page: "accounts" };
  if (path === "/admin/channels") return { page: "channels" };
  if (path === "/admin/connections") return { page: "channels", query: new URLSearchParams(loc.search) };
  if (path === "/admin/topics") return { page: "topics" };
  if (path === "/forgot-password") return { page: "forgot-password" };
  if (path === "/reset-password") return { page: "reset-password" };
  const m = /^\/tickets\/(\d{1,18})$/.exec(path);
  if (m?.[1] !== undefined) return { page: "ticket", id: Number(m[1]) };
  return { page: "notfound" };
}

type Listener = () => void;
const listeners = new Set<Listener>();

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (opts.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  listeners.forEach((l) => l());
}

window.addEventListener("popstate", () => listeners.forEach((l) => l()));

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location));
  useEffect(() => {
    const l = () => setRoute(parse(location));
    listeners.add(l);
    return () => listeners.delete(l);
  }, []);
  return route;
}

/** Click handler for in-app links: no reload. */
export function linkTo(to: string) {
  return (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
}
