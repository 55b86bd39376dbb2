import { useState } from "preact/hooks";
import { api, asProblem, problemText, type Problem } from "../api/client";
import { linkTo } from "../router";

function FieldError(props: { id: string; problem: Problem | null; field: string }) {
  const msg = props.problem?.errors?.[props.field];
  return msg ? (
    <p id={props.id} class="field-error">
      {msg}
    </p>
  ) : null;
}

/** /forgot-password: asks auth to mail a reset link (202 whether or not the
 * address exists, so the page says the same either way). */
export function ForgotPassword() {
  const [email, setEmail] = useState("");
  const [busy, setBusy] = useState(false);
  const [sent, setSent] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    const { error, response } = await api.POST("/api/Auth/forgot-password", { body: { email } });
    setBusy(false);
    if (response.ok) setSent(true);
    else setProblem(asProblem(error, response));
  };
  return (
    <main id="main" class="signin">
      <h1>Reset your password</h1>
      {sent ? (
        <p class="info" role="status">
          If an account has this address, a reset link is on its way. It is valid for a limited time.
        </p>
      ) : (
        <form onSubmit={(e) => void submit(e)} noValidate>
          <label for="email">E-mail</label>
          <input
            id="email"
            type="email"
            autoComplete="username"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
            aria-invalid={problem?.errors?.email ? true : undefined}
            aria-describedby={problem?.errors?.email ? "email-error" : undefined}
          />
          <FieldError id="email-error" problem={problem} field="email" />
          {problem && !problem.errors && (
            <p class="error" role="alert">
              {problemText(problem)}
            </p>
          )}
          <button type="submit" disabled={busy}>
            Send the reset link
          </button>
        </form>
      )}
      <p>
        <a href="/signin" onClick={linkTo("/signin")}>
          Back to sign in
        </a>
      </p>
    </main>
  );
}

/** /reset-password#token=...: the page of the mailed link (AUTH_RESET_URL).
 * The token is read from the fragment, which never reaches a server, and
 * removed from the address at once. */
export function ResetPassword() {
  const [token] = useState(() => {
    const t = new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
    if (location.hash !== "") history.replaceState(null, "", location.pathname);
    return t;
  });
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const mismatch = confirm !== "" && confirm !== password;
  const submit = async (e: Event) => {
    e.preventDefault();
    if (mismatch) return;
    setBusy(true);
    setProblem(null);
    const { error, response } = await api.POST("/api/Auth/reset-password", { body: { token, newPassword: password } });
    setBusy(false);
    if (response.ok) setDone(true);
    else setProblem(asProblem(error, response));
  };
  return (
    <main id="main" class="signin">
      <h1>Choose a new password</h1>
      {token === "" && !done && (
        <p class="error" role="alert">
          This page needs the link from the reset mail. <a href="/forgot-password" onClick={linkTo("/forgot-password")}>Ask for a new one</a>.
        </p>
      )}
      {done ? (
        <p class="info" role="status">
          Your password was changed; every earlier session has ended.{" "}
          <a href="/signin" onClick={linkTo("/signin")}>
            Sign in
          </a>
        </p>
      ) : (
        token !== "" && (
          <form onSubmit={(e) => void submit(e)} noValidate>
            <label for="new-password">New password</label>
            <input
              id="new-password"
              type="password"
              autoComplete="new-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
              aria-invalid={problem?.errors?.newPassword ? true : undefined}
              aria-describedby={problem?.errors?.newPassword ? "new-password-error" : undefined}
            />
            <FieldError id="new-password-error" problem={problem} field="newPassword" />
            <label for="confirm-password">Repeat it</label>
            <input
              id="confirm-password"
              type="password"
              autoComplete="new-password"
              required
              value={confirm}
              onInput={(e) => setConfirm(e.currentTarget.value)}
              aria-invalid={mismatch ? true : undefined}
              aria-describedby={mismatch ? "confirm-error" : undefined}
            />
            {mismatch && (
              <p id="confirm-error" class="field-error">
                The two passwords differ.
              </p>
            )}
            {problem && !problem.errors?.newPassword && (
              <p class="error" role="alert">
                {problem.errors?.token ?? problemText(problem)}
              </p>
            )}
            <button type="submit" disabled={busy || mismatch || password === ""}>
              Change the password
            </button>
          </form>
        )
      )}
    </main>
  );
}
