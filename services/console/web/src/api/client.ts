// The API client: every call goes through the gateway (same origin) with
// the session's bearer token, typed by the paths generated from
// gateway/openapi.yaml (schema.d.ts, `npm run gen`): a changed contract
// breaks `tsc`, not the agent. 429 and 503 are retried with backoff (the
// answer's Retry-After when it has one) and announced; a 401 ends the
// session.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";
import { session } from "../session";
import { notice } from "../notice";

export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];
export type Ticket = Schemas["Ticket"];
export type TicketMessage = Schemas["TicketMessage"];
export type Account = Schemas["Account"];

/** Retries of one request answered 429 or 503 before the answer is shown. */
const maxRetries = 4;

function delayFor(resp: Response, attempt: number): number {
  const ra = resp.headers.get("Retry-After");
  const secs = ra !== null && /^\d+$/.test(ra) ? Number(ra) : NaN;
  const base = Number.isFinite(secs) ? secs * 1000 : 500 * 2 ** attempt;
  return Math.min(base, 10_000) + Math.random() * 250;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** fetch with the token, the retries and the session's end on 401. */
export async function apiFetch(input: Request): Promise<Response> {
  const token = session.token();
  for (let attempt = 0; ; attempt++) {
    const req = input.clone();
    if (token !== null) req.headers.set("Authorization", "Bearer " + token);
    const resp = await fetch(req);
    if ((resp.status === 429 || resp.status === 503) && attempt < maxRetries) {
      const wait = delayFor(resp, attempt);
      notice.set(
        resp.status === 429
          ? `The API is rate limiting this console; trying again in ${Math.ceil(wait / 1000)} s.`
          : `The service is unavailable; trying again in ${Math.ceil(wait / 1000)} s.`,
      );
      await sleep(wait);
      continue;
    }
    if (attempt > 0) notice.set(resp.ok ? null : "The API is still not answering; try again later.");
    if (resp.status === 401 && token !== null) {
      session.end("Your session has expired or was ended. Please sign in again.");
    }
    return resp;
  }
}

export const api = createClient<paths>({ baseUrl: "", fetch: apiFetch });

/** The problem of a failed call, or a generic one when the body is not. */
export function asProblem(error: unknown, resp: Response): Problem {
  if (error !== null && typeof error === "object" && "title" in error) return error as Problem;
  return { type: "about:blank", title: resp.statusText || "Request failed", status: resp.status };
}

/** A problem's text for people: its detail, else its title. */
export function problemText(p: Problem): string {
  return p.detail ?? p.title;
}
