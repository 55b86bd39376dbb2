import { useEffect, useState } from "preact/hooks";
import { api, type Schemas } from "./api/client";
import { live } from "./live";
import { notice } from "./notice";
import { Accounts } from "./pages/Accounts";
import { Channels } from "./pages/admin/Channels";
import { Topics } from "./pages/admin/Topics";
import { Inbox } from "./pages/Inbox";
import { ForgotPassword, ResetPassword } from "./pages/Password";
import { SignIn } from "./pages/SignIn";
import { TicketView } from "./pages/TicketView";
import { linkTo, navigate, useRoute } from "./router";
import { session } from "./session";

export type Me = Schemas["Me"];

function useSessionActive(): boolean {
  const [active, setActive] = useState(session.active());
  useEffect(() => session.subscribe(() => setActive(session.active())), []);
  return active;
}

function Notice() {
  const [text, setText] = useState(notice.get());
  useEffect(() => notice.subscribe(setText), []);
  return (
    <div class="notice" role="status" aria-live="polite">
      {text}
    </div>
  );
}

/** The agent's own availability (whether tickets are routed to them). */
function Availability(props: { me: Me | null; onChange: (me: Me) => void }) {
  const { me } = props;
  const [busy, setBusy] = useState(false);
  if (me === null || me.account.role === "integration") return null;
  const toggle = async () => {
    setBusy(true);
    const available = !me.account.available;
    const { response } = await api.PUT("/api/Accounts/me/availability", { body: { available } });
    setBusy(false);
    if (response.ok) props.onChange({ ...me, account: { ...me.account, available } });
    else notice.set("Your availability could not be changed; try again.");
  };
  return (
    <label class="availability">
      <input type="checkbox" checked={me.account.available} disabled={busy} onChange={() => void toggle()} /> Available
    </label>
  );
}

function LiveIndicator() {
  const [open, setOpen] = useState(live.connected());
  useEffect(() => live.onState(setOpen), []);
  return (
    <span class={open ? "live live-open" : "live"} data-live={open ? "open" : "closed"}>
      {open ? "Live" : "Not live"}
    </span>
  );
}

export function App() {
  const active = useSessionActive();
  const route = useRoute();
  const [me, setMe] = useState<Me | null>(null);

  useEffect(() => {
    if (!active) {
      live.stop();
      setMe(null);
      return;
    }
    live.start();
    void api.GET("/api/Customers/me").then(({ data }) => {
      if (data) setMe(data);
    });
  }, [active]);

  useEffect(() => {
    const titles = { inbox: "Inbox", accounts: "Accounts", channels: "Channels", topics: "Topics", signin: "Sign in", "forgot-password": "Reset your password", "reset-password": "New password", notfound: "Not found" };
    const title = route.page === "ticket" ? `Ticket ${route.id}` : titles[route.page];
    document.title = `${title} · Support console`;
  }, [route]);

  // The password pages work signed in or out (a reset link opened in a
  // tab that has a session).
  if (route.page === "forgot-password" || route.page === "reset-password") {
    return (
      <>
        <Notice />
        {route.page === "forgot-password" ? <ForgotPassword /> : <ResetPassword />}
      </>
    );
  }
  if (!active) {
    return (
      <>
        <Notice />
        <SignIn />
      </>
    );
  }
  if (route.page === "signin") {
    navigate("/", { replace: true });
    return null;
  }

  const signOut = async () => {
    await api.POST("/api/Auth/logout");
    session.end(null);
    navigate("/signin", { replace: true });
  };

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/" onClick={linkTo("/")}>
          Support console
        </a>
        <nav aria-label="Main">
          <a href="/" onClick={linkTo("/")} aria-current={route.page === "inbox" ? "page" : undefined}>
            Inbox
          </a>
          {me?.account.role === "admin" && (
            <a href="/admin/accounts" onClick={linkTo("/admin/accounts")} aria-current={route.page === "accounts" ? "page" : undefined}>
              Accounts
            </a>
          )}
          {me?.account.role === "admin" && (
            <>
              <a href="/admin/channels" onClick={linkTo("/admin/channels")} aria-current={route.page === "channels" ? "page" : undefined}>
                Channels
              </a>
              <a href="/admin/topics" onClick={linkTo("/admin/topics")} aria-current={route.page === "topics" ? "page" : undefined}>
                Topics
              </a>
            </>
          )}
        </nav>
        <Availability me={me} onChange={setMe} />
        <LiveIndicator />
        <span class="who">
          {me ? `${me.account.name} (${me.account.role}) · ${me.customer.name}` : ""}
        </span>
        <button type="button" class="secondary" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <Notice />
      <main id="main" tabIndex={-1}>
        {route.page === "inbox" && <Inbox query={route.query} me={me} />}
        {route.page === "ticket" && <TicketView id={route.id} me={me} />}
        {route.page === "accounts" && <Accounts me={me} />}
        {route.page === "channels" && <Channels me={me} connect={route.query} />}
        {route.page === "topics" && <Topics me={me} />}
        {route.page === "notfound" && (
          <section>
            <h1>Page not found</h1>
            <p>
              <a href="/" onClick={linkTo("/")}>
                Back to the inbox
              </a>
            </p>
          </section>
        )}
      </main>
    </>
  );
}
