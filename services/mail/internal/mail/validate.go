package mail

import (
	"fmt"
	"regexp"
	"strings"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/textfield"
)

// Bounds of the fields (characters).
const (
	MaxNameLen             = 200
	MaxEmailLen            = 320
	MaxTenantIDLen         = 100
	MaxExternalFolderIDLen = 512
	MaxDisplayNameLen      = 255
	// MaxFolders bounds the folders of one channel.
	MaxFolders = 50
)

// tenantIDPattern is an Entra tenant: its GUID or one of its domain names
// (contoso.onmicrosoft.com).
var tenantIDPattern = regexp.MustCompile(`^(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})$`)

// Normalize trims and validates a channel, applying the defaults: provider
// none, and the inbox as the only folder of a new e-mail channel.
func (in ChannelInput) Normalize(create bool) (ChannelInput, error) {
	var v apperr.Validation
	in.Name = strings.TrimSpace(in.Name)
	textfield.Line(&v, "name", in.Name, true, MaxNameLen)
	in.Kind = strings.ToLower(strings.TrimSpace(in.Kind))
	switch in.Kind {
	case KindEmail, KindWeb, KindAPI:
	case "":
		v.Add("kind", "is required")
	default:
		v.Add("kind", "must be email, web or api")
	}
	in.EmailAddress = strings.TrimSpace(in.EmailAddress)
	if in.EmailAddress != "" {
		if e, ok := textfield.Email(in.EmailAddress); ok {
			in.EmailAddress = e
		} else {
			v.Add("emailAddress", "must be one e-mail address such as support@example.com")
		}
	} else if in.Kind == KindEmail {
		v.Add("emailAddress", "is required for an e-mail channel")
	}
	in.Provider = strings.ToLower(strings.TrimSpace(in.Provider))
	if in.Provider == "" {
		in.Provider = ProviderNone
	}
	switch in.Provider {
	case ProviderNone:
	case ProviderMicrosoft365:
		if in.Kind != "" && in.Kind != KindEmail {
			v.Add("provider", "only an e-mail channel has a mail provider")
		}
	default:
		v.Add("provider", "must be microsoft365 or none")
	}
	in.ProviderTenantID = strings.TrimSpace(in.ProviderTenantID)
	switch {
	case in.ProviderTenantID == "" && in.Provider == ProviderMicrosoft365:
		v.Add("providerTenantID", "is required for microsoft365: the customer's Entra tenant id or domain")
	case in.ProviderTenantID != "" && (len(in.ProviderTenantID) > MaxTenantIDLen || !tenantIDPattern.MatchString(in.ProviderTenantID)):
		v.Add("providerTenantID", "must be an Entra tenant id (a GUID) or domain name")
	case in.Provider == ProviderMicrosoft365:
		// Connections record tenants by their lower-case GUID.
		in.ProviderTenantID = strings.ToLower(in.ProviderTenantID)
	}
	if in.AutoRetrieveEmails && in.Kind != "" && in.Kind != KindEmail {
		v.Add("autoRetrieveEmails", "only an e-mail channel retrieves mail")
	}
	if !create {
		in.Folders = nil
	} else if in.Folders != nil && in.Kind != "" && in.Kind != KindEmail {
		v.Add("folders", "only an e-mail channel has folders")
	} else if in.Folders != nil {
		if len(in.Folders) > MaxFolders {
			v.Add("folders", fmt.Sprintf("must have at most %d items", MaxFolders))
		}
		seen := map[string]int{}
		for i, f := range in.Folders {
			var fv apperr.Validation
			f, fv = f.normalize()
			in.Folders[i] = f
			v.Merge(fmt.Sprintf("folders[%d].", i), &fv)
			if j, dup := seen[f.ExternalFolderID]; dup && f.ExternalFolderID != "" {
				v.Add(fmt.Sprintf("folders[%d].externalFolderID", i), fmt.Sprintf("repeats folders[%d]", j))
			}
			seen[f.ExternalFolderID] = i
		}
	} else if in.Kind == KindEmail {
		in.Folders = []FolderInput{{ExternalFolderID: InboxFolderID, DisplayName: "Inbox", AutoRetrieveEmails: in.AutoRetrieveEmails}}
	}
	if !v.Empty() {
		return ChannelInput{}, v.Err()
	}
	return in, nil
}

func (in FolderInput) normalize() (FolderInput, apperr.Validation) {
	var v apperr.Validation
	in.ExternalFolderID = strings.TrimSpace(in.ExternalFolderID)
	textfield.Line(&v, "externalFolderID", in.ExternalFolderID, true, MaxExternalFolderIDLen)
	in.DisplayName = strings.TrimSpace(in.DisplayName)
	textfield.Line(&v, "displayName", in.DisplayName, false, MaxDisplayNameLen)
	return in, v
}

// Normalize trims and validates a folder.
func (in FolderInput) Normalize() (FolderInput, error) {
	in, v := in.normalize()
	if !v.Empty() {
		return FolderInput{}, v.Err()
	}
	return in, nil
}
