package mail_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/textfield"
	"supportplatform.dev/services/mail/internal/mail"
)

// resourceSeeds are the spellings of GRAPH.md and resource_test.go, the
// message resources real notifications carry, and broken variants.
var resourceSeeds = []string{
	"/users/support@contoso.com/mailFolders('inbox')/messages",
	"users/support@contoso.com/mailFolders('inbox')/messages",
	"Users/support@contoso.com/MailFolders/inbox/Messages",
	"/USERS/Support@Contoso.COM/MAILFOLDERS('AbC')/MESSAGES",
	`users/a@b.example/mailFolders("AAMkAG=")/messages`,
	"users/support%40contoso.com/mailFolders('AAMk%2BAG%3D')/messages",
	"users/a@b.example/mailFolders(%27inbox%27)/messages",
	"users/a@b.example/mailFolders/ab%2Fcd/messages",
	"users/a@b.example/mailFolders('it''s')/messages",
	"users/a@b.example/mailFolders('it's')/messages",
	"users/9F4A2C1E-3B5D-4E6F-8A7B-0C1D2E3F4A5B/mailFolders('inbox')/messages",
	"Users/9f4a2c1e-3b5d-4e6f-8a7b-0c1d2e3f4a5b/Messages/AAMkAGI2TG93AAA=",
	"users/a@b.example/mailFolders('')/messages",
	"users/a@b.example/mailFolders(')/messages",
	"users/a@b.example/mailFolders('%zz')/messages",
	"users//mailFolders('inbox')/messages",
	"users/a@b.example/mailFolders('in\x00box')/messages",
	"users/a@b.example/mailFolders('in\xffbox')/messages",
	"/users/o%27brien%2Fx@b.example/mailFolders('a%25b%2Fc')/messages",
	"",
	"/",
}

// FuzzParseFolderResource: any resource a notification carries either is not
// a folder resource, or names a lower-case mailbox (an address or a GUID)
// and a storable folder id that the one formatter spells back to the same
// pair.
func FuzzParseFolderResource(f *testing.F) {
	for _, s := range resourceSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, resource string) {
		r, ok := mail.ParseFolderResource(resource)
		if !ok {
			if r != (mail.FolderResource{}) {
				t.Fatalf("refused %q but returned %+v", resource, r)
			}
			return
		}
		if r.Mailbox != strings.ToLower(r.Mailbox) {
			t.Fatalf("%q: mailbox %q not lower-case", resource, r.Mailbox)
		}
		if e, isEmail := textfield.Email(r.Mailbox); (!isEmail || e != r.Mailbox) && !isGUID(r.Mailbox) {
			t.Fatalf("%q: mailbox %q is neither a normalised address nor a GUID", resource, r.Mailbox)
		}
		checkFolderID(t, r.FolderID)
		canonical := mail.SubscriptionResource(r.Mailbox, r.FolderID)
		back, ok := mail.ParseFolderResource(canonical)
		if !ok || back != r {
			t.Fatalf("%q parsed to %+v; its canonical spelling %q parses to %+v, %v", resource, r, canonical, back, ok)
		}
	})
}

// FuzzSubscriptionResource: for every mailbox and folder id the channel API
// accepts, the subscribed resource parses back to exactly them (the
// notification fallback finds the folder by it).
func FuzzSubscriptionResource(f *testing.F) {
	f.Add("support@contoso.com", "inbox")
	f.Add("Desk@Contoso.TEST", "AAMkAGI2TG93AAA=")
	f.Add("a.b+tag@example.com", "it's")
	f.Add("o'brien@b.example", "a/b%2Fc?d#e f")
	f.Add("x@y.example", "''")
	f.Add("x@y.example", " (a) ")
	f.Add("x@y.example", `"quoted"`)
	f.Add("x@y.example", "über-Ordner ✓")
	f.Fuzz(func(t *testing.T, mailbox, folderID string) {
		mb, ok := textfield.Email(strings.TrimSpace(mailbox))
		if !ok || len(mb) > mail.MaxEmailLen {
			return
		}
		in, err := mail.FolderInput{ExternalFolderID: folderID}.Normalize()
		if err != nil {
			return
		}
		resource := mail.SubscriptionResource(mb, in.ExternalFolderID)
		got, ok := mail.ParseFolderResource(resource)
		want := mail.FolderResource{Mailbox: mb, FolderID: in.ExternalFolderID}
		if len(resource) > mail.MaxResourceLen {
			// Too long to be looked at: the subscription id finds the folder.
			return
		}
		if !ok || got != want {
			t.Fatalf("SubscriptionResource(%q, %q) = %q parses to %+v, %v; want %+v", mb, in.ExternalFolderID, resource, got, ok, want)
		}
	})
}

func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
	}
	return true
}

func checkFolderID(t *testing.T, id string) {
	t.Helper()
	if id == "" || !utf8.ValidString(id) || utf8.RuneCountInString(id) > mail.MaxExternalFolderIDLen ||
		strings.ContainsFunc(id, unicode.IsControl) {
		t.Fatalf("folder id %q is not storable", id)
	}
}
