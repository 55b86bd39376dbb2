import { useEffect, useState } from "preact/hooks";
import { api, asProblem, problemText, type Problem, type Schemas } from "../api/client";
import type { Me } from "../App";
import { DeleteButtons, DeleteRefusal, useRowDeletes } from "../components/RowDelete";

type Role = Schemas["CreateAccountRequest"]["role"];

const accountsPageSize = 50;

/** /admin/accounts: the customer's accounts, each deletable after a
 * confirmation (but one's own: the API refuses it), and a form for a new
 * one (admins only: the API answers an agent 403, and the console does not
 * offer the page to one). */
export function Accounts(props: { me: Me | null }) {
  const [page, setPage] = useState<Schemas["AccountPage"] | null>(null);
  const [pageNumber, setPageNumber] = useState(1);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [reload, setReload] = useState(0);
  const deletes = useRowDeletes();
  const [deleted, setDeleted] = useState<string | null>(null);

  const admin = props.me?.account.role === "admin";
  useEffect(() => {
    if (!admin) return;
    void api.GET("/api/Accounts", { params: { query: { pageNumber, pageSize: accountsPageSize } } }).then(({ data, error, response }) => {
      if (data) {
        if (data.items.length === 0 && pageNumber > 1) setPageNumber(Math.max(1, data.totalPages));
        setPage(data);
        setProblem(null);
      } else setProblem(asProblem(error, response));
    });
  }, [pageNumber, reload, admin]);

  const remove = async (a: Schemas["Account"]) => {
    deletes.start();
    setDeleted(null);
    const { error, response } = await api.DELETE("/api/Accounts/{id}", { params: { path: { id: a.accountID } } });
    if (response.ok) {
      setDeleted(`${a.email} is deleted: it can no longer sign in.`);
      setReload((n) => n + 1);
    } else deletes.refuse(a.accountID, asProblem(error, response));
  };

  if (props.me !== null && props.me.account.role !== "admin") {
    return (
      <section>
        <h1>Accounts</h1>
        <p class="error" role="alert">
          This page is for administrators.
        </p>
      </section>
    );
  }
  return (
    <section aria-labelledby="accounts-title">
      <h1 id="accounts-title">Accounts</h1>
      {problem && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
      {deleted && (
        <p class="ok" role="status">
          {deleted}
        </p>
      )}
      {page && (
        <>
          <p class="summary">
            {page.items.length > 0 && page.items.length < page.totalCount
              ? `${(pageNumber - 1) * accountsPageSize + 1}–${(pageNumber - 1) * accountsPageSize + page.items.length} of `
              : ""}
            {page.totalCount} account{page.totalCount === 1 ? "" : "s"}
          </p>
          <table class="tickets">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">E-mail</th>
                <th scope="col">Role</th>
                <th scope="col">Available</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {page.items.map((a) => (
                <tr key={a.accountID} data-account-id={a.accountID}>
                  <td>{a.name}</td>
                  <td>{a.email}</td>
                  <td>{a.role}</td>
                  <td>{a.available ? "Yes" : "No"}</td>
                  <td>{new Date(a.createdAt).toLocaleDateString()}</td>
                  <td>
                    {a.accountID === props.me?.account.accountID ? (
                      <span class="hint">you</span>
                    ) : (
                      <div class="row-actions">
                        <DeleteButtons id={a.accountID} deletes={deletes} onConfirm={() => void remove(a)} />
                      </div>
                    )}
                    <DeleteRefusal id={a.accountID} deletes={deletes} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={pageNumber <= 1} onClick={() => setPageNumber(pageNumber - 1)}>
              Previous
            </button>
            <span>
              Page {pageNumber} of {Math.max(page.totalPages, 1)}
            </span>
            <button type="button" disabled={pageNumber >= page.totalPages} onClick={() => setPageNumber(pageNumber + 1)}>
              Next
            </button>
          </nav>
        </>
      )}
      <NewAccount onCreated={() => setReload((n) => n + 1)} />
    </section>
  );
}

function NewAccount(props: { onCreated: () => void }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("agent");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [created, setCreated] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    setCreated(null);
    const { data, error, response } = await api.POST("/api/Accounts", { body: { email, name, role, password } });
    setBusy(false);
    if (data) {
      setCreated(`${data.email} can sign in now.`);
      setEmail("");
      setName("");
      setPassword("");
      props.onCreated();
    } else setProblem(asProblem(error, response));
  };
  const err = (f: string) => problem?.errors?.[f];
  const field = (id: string, label: string, f: string, input: preact.JSX.Element) => (
    <div class="field">
      <label for={id}>{label}</label>
      {input}
      {err(f) && (
        <p id={`${id}-error`} class="field-error">
          {err(f)}
        </p>
      )}
    </div>
  );
  return (
    <form class="new-account" onSubmit={(e) => void submit(e)} noValidate aria-labelledby="new-account-title">
      <h2 id="new-account-title">New account</h2>
      {field(
        "acc-email",
        "E-mail",
        "email",
        <input id="acc-email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)}
          aria-invalid={err("email") ? true : undefined} aria-describedby={err("email") ? "acc-email-error" : undefined} />,
      )}
      {field(
        "acc-name",
        "Name",
        "name",
        <input id="acc-name" value={name} onInput={(e) => setName(e.currentTarget.value)}
          aria-invalid={err("name") ? true : undefined} aria-describedby={err("name") ? "acc-name-error" : undefined} />,
      )}
      {field(
        "acc-role",
        "Role",
        "role",
        <select id="acc-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          <option value="agent">Agent</option>
          <option value="admin">Admin</option>
          <option value="integration">Integration</option>
        </select>,
      )}
      {field(
        "acc-password",
        "Password",
        "password",
        <input id="acc-password" type="password" autoComplete="new-password" required value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          aria-invalid={err("password") ? true : undefined} aria-describedby={err("password") ? "acc-password-error" : undefined} />,
      )}
      {problem && !problem.errors && (
        <p class="error" role="alert">
          {problemText(problem)}
        </p>
      )}
      {created && (
        <p class="ok" role="status">
          {created}
        </p>
      )}
      <button type="submit" disabled={busy}>
        Create the account
      </button>
    </form>
  );
}
