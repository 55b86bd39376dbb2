import { useEffect, useRef, useState } from "preact/hooks";
import { api, asProblem, problemText, type Problem, type Schemas } from "../../api/client";
import type { Me } from "../../App";
import { DeleteButtons, DeleteRefusal, useRowDeletes } from "../../components/RowDelete";
import { AdminOnly, bool, Pager, Resource, str, type ResourceSpec, type Values } from "./Resource";

type Channel = Schemas["Channel"];
type Folder = Schemas["Folder"];
type Toggle = Schemas["ToggleResult"];
type Connection = Schemas["ProviderConnection"];
type Kind = Schemas["ChannelRequest"]["kind"];
type Provider = Schemas["ChannelRequest"]["provider"];

const when = (s: string | null | undefined) => (s ? new Date(s).toLocaleString() : "—");

/** /admin/channels: the customer's channels, the selected channel's
 * folders and its mail retrieval switch, and the Microsoft 365 tenants
 * connected to the customer. /admin/connections is the same page where
 * the connect flow ends: connect holds its outcome (the callback's query). */
export function Channels(props: { me: Me | null; connect?: URLSearchParams | undefined }) {
  return (
    <AdminOnly me={props.me} title="Channels">
      <ChannelsPage connect={props.connect} />
    </AdminOnly>
  );
}

function channelBody(v: Values): Schemas["ChannelRequest"] {
  const kind = str(v, "kind") as Kind;
  const email = kind === "email";
  const provider = (email ? str(v, "provider") : "none") as Provider;
  return {
    name: str(v, "name"),
    kind,
    ...(email ? { emailAddress: str(v, "emailAddress") } : {}),
    provider,
    ...(provider === "microsoft365" ? { providerTenantID: str(v, "providerTenantID") } : {}),
    autoRetrieveEmails: email && bool(v, "autoRetrieveEmails"),
  };
}

function ChannelsPage(props: { connect?: URLSearchParams | undefined }) {
  const [selected, setSelected] = useState<Channel | null>(null);
  // A switch changes the channel's autoRetrieveEmails: read the list again.
  const [toggled, setToggled] = useState(0);
  const spec: ResourceSpec<Channel> = {
    id: "channel",
    reloadKey: toggled,
    title: "Channels",
    noun: "channel",
    key: (c) => c.channelID,
    columns: [
      { label: "Name", cell: (c) => c.name },
      { label: "Kind", cell: (c) => c.kind },
      { label: "E-mail", cell: (c) => c.emailAddress ?? "—" },
      { label: "Provider", cell: (c) => (c.provider === "microsoft365" ? `Microsoft 365 (${c.providerTenantID ?? ""})` : "none") },
      { label: "Retrieves mail", cell: (c) => (c.autoRetrieveEmails ? "Yes" : "No") },
    ],
    fields: [
      { name: "name", label: "Name" },
      {
        name: "kind",
        label: "Kind",
        type: "select",
        options: [
          { value: "email", label: "E-mail" },
          { value: "web", label: "Web" },
          { value: "api", label: "API" },
        ],
      },
      { name: "emailAddress", label: "E-mail address", type: "email", showIf: (v) => v["kind"] === "email" },
      {
        name: "provider",
        label: "Mail provider",
        type: "select",
        options: [
          { value: "none", label: "None" },
          { value: "microsoft365", label: "Microsoft 365" },
        ],
        showIf: (v) => v["kind"] === "email",
      },
      {
        name: "providerTenantID",
        label: "Microsoft 365 tenant (a connected tenant's id)",
        showIf: (v) => v["kind"] === "email" && v["provider"] === "microsoft365",
      },
      { name: "autoRetrieveEmails", label: "Retrieve mail automatically", type: "checkbox", showIf: (v) => v["kind"] === "email" },
    ],
    empty: { name: "", kind: "email", emailAddress: "", provider: "none", providerTenantID: "", autoRetrieveEmails: false },
    toValues: (c) => ({
      name: c.name,
      kind: c.kind,
      emailAddress: c.emailAddress ?? "",
      provider: c.provider,
      providerTenantID: c.providerTenantID ?? "",
      autoRetrieveEmails: c.autoRetrieveEmails,
    }),
    list: (pageNumber) => api.GET("/api/Channels", { params: { query: { pageNumber, pageSize: 20, isDeleted: false } } }),
    create: (v) => api.POST("/api/Channels", { body: channelBody(v) }),
    update: (id, v) => api.PUT("/api/Channels/{id}", { params: { path: { id } }, body: channelBody(v) }),
    remove: (id) => {
      if (selected?.channelID === id) setSelected(null);
      return api.DELETE("/api/Channels/{id}", { params: { path: { id } } });
    },
    rowActions: (c) =>
      c.kind === "email" && (
        <button type="button" class="secondary folders" aria-pressed={selected?.channelID === c.channelID} onClick={() => setSelected(c)}>
          Folders
        </button>
      ),
  };
  return (
    <section aria-labelledby="channels-page-title">
      <h1 id="channels-page-title">Channels and folders</h1>
      <Resource spec={spec} />
      {selected && <ChannelFolders key={selected.channelID} channel={selected} onToggled={() => setToggled((n) => n + 1)} />}
      <Connections outcome={props.connect} />
    </section>
  );
}

function folderBody(v: Values): Schemas["FolderRequest"] {
  return { externalFolderID: str(v, "externalFolderID"), displayName: str(v, "displayName"), autoRetrieveEmails: bool(v, "autoRetrieveEmails") };
}

/** One e-mail channel's folders and its retrieval switch, with each
 * folder's outcome from the switch's answer. */
function ChannelFolders(props: { channel: Channel; onToggled: () => void }) {
  const id = props.channel.channelID;
  const [toggled, setToggled] = useState(0);
  const [result, setResult] = useState<Toggle | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);

  const toggle = async (on: boolean) => {
    setBusy(true);
    setProblem(null);
    const opts = { params: { path: { id } } };
    const { data, error, response } = on
      ? await api.POST("/api/ProviderWebhook/subscribe/{id}", opts)
      : await api.POST("/api/ProviderWebhook/unsubscribe/{id}", opts);
    setBusy(false);
    if (data) {
      setResult(data);
      setToggled((n) => n + 1);
      props.onToggled();
    } else setProblem(asProblem(error, response));
  };

  const spec: ResourceSpec<Folder> = {
    id: "folder",
    title: `Folders of ${props.channel.name}`,
    noun: "folder",
    heading: "h3",
    reloadKey: toggled,
    key: (f) => f.folderID,
    columns: [
      { label: "Folder", cell: (f) => f.externalFolderID },
      { label: "Name", cell: (f) => f.displayName },
      { label: "Retrieves mail", cell: (f) => (f.autoRetrieveEmails ? "Yes" : "No") },
      { label: "Subscription until", cell: (f) => (f.providerSubscriptionId ? when(f.providerSubscriptionExpiration) : "none") },
      { label: "Last import", cell: (f) => when(f.lastImportAt) },
      { label: "Skipped mails", cell: (f) => (f.skippedMessages > 0 ? <span title={f.lastSkipReason ?? ""}>{f.skippedMessages}</span> : "0") },
    ],
    fields: [
      { name: "externalFolderID", label: "Provider folder (id or well-known name such as inbox)" },
      { name: "displayName", label: "Display name" },
      { name: "autoRetrieveEmails", label: "Retrieve mail automatically", type: "checkbox" },
    ],
    empty: { externalFolderID: "", displayName: "", autoRetrieveEmails: false },
    toValues: (f) => ({ externalFolderID: f.externalFolderID, displayName: f.displayName, autoRetrieveEmails: f.autoRetrieveEmails }),
    list: (pageNumber) => api.GET("/api/Channels/{id}/folders", { params: { path: { id }, query: { pageNumber, pageSize: 20 } } }),
    create: (v) => api.POST("/api/Channels/{id}/folders", { params: { path: { id } }, body: folderBody(v) }),
    update: (folderId, v) =>
      api.PUT("/api/Channels/{id}/folders/{folderId}", { params: { path: { id, folderId } }, body: folderBody(v) }),
    remove: (folderId) => api.DELETE("/api/Channels/{id}/folders/{folderId}", { params: { path: { id, folderId } } }),
  };

  return (
    <section class="channel-folders" aria-labelledby="toggle-title">
      <h2 id="toggle-title">Mail retrieval of {props.channel.name}</h2>
      <div class="form-buttons">
        <button type="button" class="subscribe" disabled={busy} onClick={() => void toggle(true)}>
          Subscribe (retrieve mail)
        </button>
        <button type="button" class="secondary unsubscribe" disabled={busy} onClick={() => void toggle(false)}>
          Unsubscribe
        </button>
      </div>
      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
      {result && (
        <div class="outcomes" role="status">
          <p>
            Mail retrieval is {result.autoRetrieveEmails ? "on" : "off"} for this channel.
          </p>
          <ul>
            {result.folders.map((f) => (
              <li key={f.folderID} data-folder-id={f.folderID} data-outcome={f.outcome}>
                {f.externalFolderID}: <strong>{f.outcome}</strong>
                {f.error ? ` (${f.error})` : ""}
              </li>
            ))}
          </ul>
        </div>
      )}
      <Resource spec={spec} />
    </section>
  );
}

interface Banner {
  ok: boolean;
  text: string;
}

/** What a failed connect flow's code (a fixed list, services/mail) means. */
const connectCodes: Record<string, string> = {
  invalid:
    "Microsoft's answer was not accepted: the sign-in or the consent was declined, the attempt had expired or was already answered, or the consent was for another tenant.",
  not_found: "The connection attempt was not found; start it again.",
  conflict: "This Microsoft 365 tenant is already connected to another customer.",
  rate_limited: "Too many attempts; wait a moment and start again.",
  unavailable: "The Microsoft identity platform could not be reached; start the connection again.",
  internal: "An unexpected error ended the connection; start it again.",
};

/** The banner of a finished connect flow. The query only says which
 * connection to look at: its status and reason are read from the API, so a
 * crafted link cannot show a false success, and no text of the address is
 * shown. */
async function connectOutcome(q: URLSearchParams): Promise<Banner | null> {
  const outcome = q.get("outcome");
  if (outcome !== "connected" && outcome !== "error") return null;
  const raw = q.get("connection") ?? "";
  const codeText = connectCodes[q.get("code") ?? ""] ?? connectCodes["internal"] ?? "";
  if (!/^[1-9]\d{0,17}$/.test(raw)) return outcome === "error" ? { ok: false, text: `The tenant was not connected. ${codeText}` } : null;
  const { data } = await api.GET("/api/ProviderConnections/{id}", { params: { path: { id: Number(raw) } } });
  if (!data) return { ok: false, text: `The tenant was not connected. ${codeText}` };
  if (data.status === "connected") {
    return {
      ok: true,
      text: `The Microsoft 365 tenant ${data.providerTenantID ?? ""} is connected${data.signedInAs ? ` (signed in as ${data.signedInAs})` : ""}. An e-mail channel can now use it.`,
    };
  }
  return { ok: false, text: `The tenant was not connected: ${data.lastError ?? codeText}` };
}

/** The Microsoft 365 tenants: a connection starts here and goes on at
 * Microsoft (same tab), which brings the browser back to the callback and
 * the callback back here (/admin/connections) with the outcome. */
function Connections(props: { outcome?: URLSearchParams | undefined }) {
  const [page, setPage] = useState<Schemas["ProviderConnectionPage"] | null>(null);
  const [pageNumber, setPageNumber] = useState(1);
  const [reload, setReload] = useState(0);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [loginHint, setLoginHint] = useState("");
  const [busy, setBusy] = useState(false);
  const [banner, setBanner] = useState<Banner | null>(null);
  const deletes = useRowDeletes();
  const bannerRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    void api.GET("/api/ProviderConnections", { params: { query: { pageNumber, pageSize: 20 } } }).then(({ data, error, response }) => {
      if (data) setPage(data);
      else setProblem(asProblem(error, response));
    });
  }, [pageNumber, reload]);

  useEffect(() => {
    if (!props.outcome) return;
    const q = props.outcome;
    // A reload of the page must not announce the outcome again.
    history.replaceState(null, "", "/admin/connections");
    void connectOutcome(q).then((b) => {
      setBanner(b);
      setReload((n) => n + 1);
    });
  }, [props.outcome]);
  useEffect(() => {
    bannerRef.current?.scrollIntoView({ block: "center" });
  }, [banner]);

  const connect = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    setBanner(null);
    const hint = loginHint.trim();
    const { data, error, response } = await api.POST("/api/ProviderConnections", {
      body: { provider: "microsoft365", ...(hint ? { loginHint: hint } : {}) },
    });
    if (data?.authorizationUrl) {
      location.assign(data.authorizationUrl);
      return;
    }
    setBusy(false);
    setProblem(asProblem(error, response));
  };
  const remove = async (c: Connection) => {
    deletes.start();
    const { error, response } = await api.DELETE("/api/ProviderConnections/{id}", { params: { path: { id: c.connectionID } } });
    if (response.ok) setReload((n) => n + 1);
    else deletes.refuse(c.connectionID, asProblem(error, response));
  };

  return (
    <section class="connections" aria-labelledby="connections-title">
      <h2 id="connections-title">Microsoft 365 tenants</h2>
      {banner && (
        <div ref={bannerRef} class={banner.ok ? "banner banner-ok" : "banner banner-error"} role={banner.ok ? "status" : "alert"} data-outcome={banner.ok ? "connected" : "error"}>
          {banner.text}
        </div>
      )}
      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
      {page && page.items.length === 0 && <p class="summary">No tenant is connected yet.</p>}
      {page && page.items.length > 0 && (
        <>
          <p class="summary">
            {page.totalCount} tenant{page.totalCount === 1 ? "" : "s"}
          </p>
          <table class="tickets">
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Tenant</th>
                <th scope="col">Signed in as</th>
                <th scope="col">Started</th>
                <th scope="col">Connected</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {page.items.map((c) => (
                <tr key={c.connectionID} data-id={c.connectionID} data-status={c.status}>
                  <td>
                    {c.status}
                    {c.lastError ? ` (${c.lastError})` : ""}
                  </td>
                  <td>{c.providerTenantID ?? "—"}</td>
                  <td>{c.signedInAs ?? "—"}</td>
                  <td>{when(c.dateCreated)}</td>
                  <td>{when(c.dateConnected)}</td>
                  <td>
                    <div class="row-actions">
                      <DeleteButtons id={c.connectionID} deletes={deletes} onConfirm={() => void remove(c)} />
                    </div>
                    <DeleteRefusal id={c.connectionID} deletes={deletes} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.totalPages > 1 && <Pager pageNumber={pageNumber} totalPages={page.totalPages} onPage={setPageNumber} label="Tenant pages" />}
        </>
      )}
      <form class="admin-form" onSubmit={(e) => void connect(e)} noValidate aria-label="Connect a Microsoft 365 tenant">
        <div class="field">
          <label for="conn-login-hint">Microsoft admin account (optional)</label>
          <input id="conn-login-hint" type="email" value={loginHint} onInput={(e) => setLoginHint(e.currentTarget.value)} />
        </div>
        <button type="submit" disabled={busy}>
          Connect a Microsoft 365 tenant
        </button>
      </form>
    </section>
  );
}
