package mail_test

import (
	"strings"
	"testing"

	"supportplatform.dev/services/mail/internal/mail"
)

func TestParseFolderResource(t *testing.T) {
	const guid = "9f4a2c1e-3b5d-4e6f-8a7b-0c1d2e3f4a5b"
	const longID = "AAMkAGI2TG93AAA="
	tests := []struct {
		name     string
		resource string
		want     mail.FolderResource
		ok       bool
	}{
		{"documented quoted form", "/users/support@contoso.com/mailFolders('inbox')/messages", mail.FolderResource{"support@contoso.com", "inbox"}, true},
		{"documented form without leading slash", "users/support@contoso.com/mailFolders('inbox')/messages", mail.FolderResource{"support@contoso.com", "inbox"}, true},
		{"path form", "Users/support@contoso.com/MailFolders/inbox/Messages", mail.FolderResource{"support@contoso.com", "inbox"}, true},
		{"path form with leading slash", "/users/support@contoso.com/mailFolders/inbox/messages", mail.FolderResource{"support@contoso.com", "inbox"}, true},
		{"upper case keywords", "/USERS/support@contoso.com/MAILFOLDERS('inbox')/MESSAGES", mail.FolderResource{"support@contoso.com", "inbox"}, true},
		{"mailbox lower-cased", "users/Support@Contoso.COM/mailFolders('inbox')/messages", mail.FolderResource{"support@contoso.com", "inbox"}, true},
		{"folder id case kept", "users/a@b.example/mailFolders('AbC')/messages", mail.FolderResource{"a@b.example", "AbC"}, true},
		{"double quotes", `users/a@b.example/mailFolders("AAMkAG=")/messages`, mail.FolderResource{"a@b.example", "AAMkAG="}, true},
		{"provider folder id", "users/a@b.example/mailFolders('" + longID + "')/messages", mail.FolderResource{"a@b.example", longID}, true},
		{"percent-encoded mailbox and folder", "users/support%40contoso.com/mailFolders('AAMk%2BAG%3D')/messages", mail.FolderResource{"support@contoso.com", "AAMk+AG="}, true},
		{"percent-encoded quotes", "users/a@b.example/mailFolders(%27inbox%27)/messages", mail.FolderResource{"a@b.example", "inbox"}, true},
		{"encoded slash stays in the folder id", "users/a@b.example/mailFolders/ab%2Fcd/messages", mail.FolderResource{"a@b.example", "ab/cd"}, true},
		{"doubled single quote", "users/a@b.example/mailFolders('it''s')/messages", mail.FolderResource{"a@b.example", "it's"}, true},
		{"GUID mailbox", "Users/" + strings.ToUpper(guid) + "/mailFolders('inbox')/messages", mail.FolderResource{guid, "inbox"}, true},
		{"plus address", "users/help+eu@contoso.com/mailfolders('inbox')/messages", mail.FolderResource{"help+eu@contoso.com", "inbox"}, true},

		{"message resource from a real notification", "Users/" + guid + "/Messages/AAMkAGUAAA=", mail.FolderResource{}, false},
		{"message resource with leading slash", "/users/" + guid + "/messages/AAMkAGUAAA=", mail.FolderResource{}, false},
		{"message in folder", "users/a@b.example/mailFolders('inbox')/messages/AAMk", mail.FolderResource{}, false},
		{"messages without folder", "users/a@b.example/messages", mail.FolderResource{}, false},
		{"me instead of users", "me/mailFolders('inbox')/messages", mail.FolderResource{}, false},
		{"empty", "", mail.FolderResource{}, false},
		{"only a slash", "/", mail.FolderResource{}, false},
		{"garbage", "not a resource at all", mail.FolderResource{}, false},
		{"two leading slashes", "//users/a@b.example/mailFolders('inbox')/messages", mail.FolderResource{}, false},
		{"trailing slash", "users/a@b.example/mailFolders('inbox')/messages/", mail.FolderResource{}, false},
		{"empty folder key", "users/a@b.example/mailFolders('')/messages", mail.FolderResource{}, false},
		{"unquoted folder key", "users/a@b.example/mailFolders(inbox)/messages", mail.FolderResource{}, false},
		{"mismatched quotes", `users/a@b.example/mailFolders('inbox")/messages`, mail.FolderResource{}, false},
		{"unclosed parenthesis", "users/a@b.example/mailFolders('inbox'/messages", mail.FolderResource{}, false},
		{"lone quote inside", "users/a@b.example/mailFolders('in'box')/messages", mail.FolderResource{}, false},
		{"malformed escape", "users/a%zz@b.example/mailFolders('inbox')/messages", mail.FolderResource{}, false},
		{"mailbox neither address nor GUID", "users/support/mailFolders('inbox')/messages", mail.FolderResource{}, false},
		{"mailbox with display name", "users/Bob <b@x.example>/mailFolders('inbox')/messages", mail.FolderResource{}, false},
		{"control character in folder", "users/a@b.example/mailFolders/in%00box/messages", mail.FolderResource{}, false},
		{"invalid UTF-8 encoded", "users/a@b.example/mailFolders/%ff/messages", mail.FolderResource{}, false},
		{"contacts, not messages", "users/a@b.example/mailFolders('inbox')/contacts", mail.FolderResource{}, false},
		{"other collection", "users/a@b.example/calendars('x')/messages", mail.FolderResource{}, false},
		{"folder id too long", "users/a@b.example/mailFolders/" + strings.Repeat("x", mail.MaxExternalFolderIDLen+1) + "/messages", mail.FolderResource{}, false},
		{"very long", "users/a@b.example/mailFolders('" + strings.Repeat("a", 100000) + "')/messages", mail.FolderResource{}, false},
		{"many segments", strings.Repeat("users/", 5000), mail.FolderResource{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := mail.ParseFolderResource(tt.resource)
			if ok != tt.ok || got != tt.want {
				t.Errorf("ParseFolderResource(%.80q) = %+v, %v; want %+v, %v", tt.resource, got, ok, tt.want, tt.ok)
			}
		})
	}
}
