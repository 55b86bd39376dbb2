package e2econsole

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/smtpfake"
)

var resetLinkRe = regexp.MustCompile(`/reset-password#token=([A-Za-z0-9_-]+)`)

// The password pages: the sign-in page leads to /forgot-password, which
// asks for the mail; the mailed link (AUTH_RESET_URL, the console's
// /reset-password) opens the page that sets the new password, the token
// leaves the address bar at once, and the new password signs in.
func TestPasswordReset(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	email, password := "reset-"+randid.Hex(4)+"@console.test", "pw-"+randid.Hex(10)
	out, err := stk.Command(ctx, "auth", "bootstrap", "-customer", "Reset "+randid.Hex(3), "-email", email, "-password", password).CombinedOutput()
	if err != nil {
		t.Fatalf("bootstrap: %v %s", err, out)
	}

	bctx, bl := newBrowser(t, ctx)
	var status string
	err = chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/signin"),
		chromedp.WaitVisible(`a[href="/forgot-password"]`, chromedp.ByQuery),
		chromedp.Click(`a[href="/forgot-password"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#email`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.info[role=status]`, chromedp.ByQuery),
		chromedp.Text(`.info[role=status]`, &status, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("asking for the reset mail: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.Contains(status, "reset link is on its way") {
		t.Errorf("after asking: %q", status)
	}

	var link string
	_, err = stk.Mail.Wait(ctx, func(msgs []smtpfake.Message) bool {
		for _, m := range msgs {
			if len(m.To) == 1 && m.To[0] == email {
				if l := resetLinkRe.FindString(stack.FormatMail(m)); l != "" {
					link = l
					return true
				}
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no reset mail to %s: %v", email, err)
	}

	newPassword := "new-" + randid.Hex(10)
	var address, done string
	err = chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+link),
		chromedp.WaitVisible(`#new-password`, chromedp.ByQuery),
		chromedp.Evaluate(`location.href`, &address),
		chromedp.SendKeys(`#new-password`, newPassword, chromedp.ByQuery),
		chromedp.SendKeys(`#confirm-password`, newPassword, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.info[role=status]`, chromedp.ByQuery),
		chromedp.Text(`.info[role=status]`, &done, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("setting the new password: %v; %s", err, pageState(bctx, bl))
	}
	if strings.Contains(address, "token") {
		t.Errorf("the token stays in the address bar: %s", address)
	}
	if !strings.Contains(done, "password was changed") {
		t.Errorf("after the reset: %q", done)
	}
	screenshot(t, bctx, "reset")
	if tok := client(t).Login(email, newPassword); tok == "" {
		t.Error("the new password does not sign in")
	}
	if _, problems := bl.snapshot(); len(problems) > 0 {
		t.Errorf("the pages reported problems:\n%s", strings.Join(problems, "\n"))
	}
}
