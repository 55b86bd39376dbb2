// Lighthouse (performance and accessibility, its default mobile settings)
// against console pages through the gateway, signed in.
//
// The console keeps its token in sessionStorage (this tab only), so no
// header or cookie can sign Lighthouse in. Instead puppeteer-core drives
// Debian's Chromium (no browser is downloaded): it signs in through the
// sign-in page as an agent would, and Lighthouse then audits navigations
// of that same tab. Lighthouse clears the origin's caches and stored data
// before each navigation (a cold load); sessionStorage is not among what it
// clears, so the page loads signed in — which the script checks after each
// audit (a report of the sign-in page would be worthless).
//
// Usage: node run.mjs <gateway URL> <out dir> <name>=<path> ...
// with CONSOLE_EMAIL and CONSOLE_PASSWORD in the environment, CHROME_PATH
// the browser (default /usr/bin/chromium) and LIGHTHOUSE_RUNS the audits
// per page (default 3: the score of one run varies with the machine's load;
// the caller takes the median). Writes <out>/lighthouse-<name>-<run>.json
// (the Lighthouse result) and .html (its report); the caller reads the
// scores from the JSON.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateReport, navigation } from "lighthouse";
import puppeteer from "puppeteer-core";

// What each page shows once its data is loaded: the audit must have seen
// the signed-in page, not the sign-in form.
const loaded = {
  inbox: "document.querySelectorAll('tr[data-ticket-id]').length > 0",
  ticket: "document.querySelectorAll('.thread li').length > 0",
};

async function main() {
  const [base, outDir, ...pages] = process.argv.slice(2);
  const email = process.env.CONSOLE_EMAIL;
  const password = process.env.CONSOLE_PASSWORD;
  const runs = Number(process.env.LIGHTHOUSE_RUNS || "3");
  if (!base || !outDir || pages.length === 0 || !email || !password || !(runs >= 1)) {
    throw new Error("usage: CONSOLE_EMAIL=... CONSOLE_PASSWORD=... node run.mjs <gateway URL> <out dir> <name>=<path> ...");
  }
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROME_PATH || "/usr/bin/chromium",
    headless: true,
    // The stack's development certificate; /dev/shm is small in containers.
    args: ["--no-sandbox", "--ignore-certificate-errors", "--disable-dev-shm-usage", "--disable-quic"],
    defaultViewport: null,
  });
  try {
    const page = await browser.newPage();
    await page.goto(new URL("/signin", base).href, { waitUntil: "load" });
    await page.waitForSelector("#email");
    await page.type("#email", email);
    await page.type("#password", password);
    await Promise.all([page.waitForFunction(loaded.inbox, { timeout: 60_000 }), page.click("button[type=submit]")]);

    for (const spec of pages) {
      const eq = spec.indexOf("=");
      const name = spec.slice(0, eq);
      const path = spec.slice(eq + 1);
      if (eq <= 0 || !(name in loaded)) throw new Error(`page ${spec}: want inbox=<path> or ticket=<path>`);
      const url = new URL(path, base).href;
      for (let run = 1; run <= runs; run++) {
        const result = await navigation(page, url, {
          config: { extends: "lighthouse:default", settings: { onlyCategories: ["performance", "accessibility"] } },
        });
        if (!result) throw new Error(`${name}: Lighthouse returned no result`);
        // Still the signed-in page after the audit (the same document).
        const ok = await page
          .waitForFunction(loaded[name], { timeout: 30_000 })
          .then(() => true)
          .catch(() => false);
        if (!ok) throw new Error(`${name}: ${url} did not show its data signed in; the report would not measure it`);
        const file = join(outDir, `lighthouse-${name}-${run}`);
        await writeFile(file + ".json", JSON.stringify(result.lhr, null, 1));
        await writeFile(file + ".html", generateReport(result.lhr, "html"));
        console.log(`lighthouse: ${name} ${url} run ${run} of ${runs} done`);
      }
    }
  } finally {
    await browser.close();
  }
}

main().catch((err) => {
  console.error("lighthouse:", err instanceof Error ? err.message : err);
  process.exit(1);
});
