import { useState } from "preact/hooks";
import { api, asProblem, problemText, type Problem } from "../api/client";
import { linkTo, navigate } from "../router";
import { session } from "../session";

export function SignIn() {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  // Why the last session ended (expiry, sign-out elsewhere), shown once.
  const [ended] = useState(() => session.takeEndMessage());

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    const { data, error, response } = await api.POST("/api/Auth/login", { body: { email, password } });
    setBusy(false);
    if (!data) {
      setProblem(asProblem(error, response));
      return;
    }
    session.start({ token: data.accessToken, expiresAt: data.expiresAt });
    if (location.pathname === "/signin") navigate("/", { replace: true });
  };

  const fieldError = (f: string) => problem?.errors?.[f];
  return (
    <main id="main" class="signin">
      <h1>Sign in to the support console</h1>
      {ended && (
        <p class="info" role="alert">
          {ended}
        </p>
      )}
      <form onSubmit={(e) => void submit(e)} noValidate>
        <label for="email">E-mail</label>
        <input
          id="email"
          name="email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
          aria-invalid={fieldError("email") ? true : undefined}
          aria-describedby={fieldError("email") ? "email-error" : undefined}
        />
        {fieldError("email") && (
          <p id="email-error" class="field-error">
            {fieldError("email")}
          </p>
        )}
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          aria-invalid={fieldError("password") ? true : undefined}
          aria-describedby={fieldError("password") ? "password-error" : undefined}
        />
        {fieldError("password") && (
          <p id="password-error" class="field-error">
            {fieldError("password")}
          </p>
        )}
        {problem && !problem.errors && (
          <p class="error" role="alert">
            {problemText(problem)}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <p>
        <a href="/forgot-password" onClick={linkTo("/forgot-password")}>
          Forgot your password?
        </a>
      </p>
    </main>
  );
}
